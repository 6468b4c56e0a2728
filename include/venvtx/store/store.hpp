// The store of one venv: <store>/index.sqlite, objects/, staging/, and its locks.
#pragma once

#include "venvtx/store/database.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/store/lock.hpp"
#include "venvtx/store/object_store.hpp"

#include <filesystem>
#include <memory>
#include <optional>

namespace venvtx {

class Store {
public:
    // Opens the store at `root` (creating its directories when `create` is set) and applies
    // pending migrations. Read-only commands check exists() first.
    Store(std::filesystem::path root, bool create);

    static bool exists(const std::filesystem::path& root);
    const std::filesystem::path& root() const { return m_root; }
    Database& db() { return *m_db; }
    History& history() { return m_history; }
    ObjectStore& objects() { return m_objects; }
    // Exit 5, one line, where this user can only read the index (another user's store).
    void require_writable();

private:
    std::filesystem::path m_root;
    std::unique_ptr<Database> m_db;
    History m_history;
    ObjectStore m_objects;
};

// Both locks a mutating command holds: the store's and <venv>/.lock (the file uv locks).
class MutationLock {
public:
    MutationLock(const std::filesystem::path& store_root, const std::filesystem::path& venv_root,
                 std::optional<double> wait_s);
    // uv locks <venv>/.lock itself: the uv venvtx runs must be let in (the store stays locked).
    FileLock& venv_lock() { return m_venv; }

private:
    FileLock m_venv;
    FileLock m_store;
};

} // namespace venvtx
