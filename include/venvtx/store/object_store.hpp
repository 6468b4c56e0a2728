// Content-addressed objects: objects/<2 hex>/<62 hex>, immutable and deduplicated, plus a
// staging area where a transaction parks files (by rename, no copy) before they are hashed.
#pragma once

#include "venvtx/core/sha256.hpp"

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

namespace venvtx {

class ObjectStore {
public:
    explicit ObjectStore(std::filesystem::path root);

    const std::filesystem::path& root() const { return m_root; }
    std::filesystem::path object_path(const std::string& hex) const;
    std::filesystem::path staging_dir(std::int64_t tx) const;
    bool has(const std::string& hex) const;

    // Moves a staged file (whose content hashes to `hex`) under its object name, replacing any
    // stored copy. Returns whether the object is new.
    bool adopt(const std::filesystem::path& staged, const std::string& hex);

    // Re-hashes an object; throws an Error naming it when missing or when its bytes differ.
    void verify(const std::string& hex) const;

private:
    std::filesystem::path m_root;
    std::set<std::string> m_made_dirs;  // objects/<2 hex> directories this process made sure of
};

} // namespace venvtx
