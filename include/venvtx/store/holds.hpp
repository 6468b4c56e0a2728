// Holds (migration 0012): a second name in <store>/holds/ for each file of a recorded state, so
// the bytes pip or uv unlink stay alive; and each held distribution's layout.
#pragma once

#include "venvtx/store/database.hpp"
#include "venvtx/store/object_store.hpp"

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

// One row of `holds`.
struct HeldFile {
    std::string sha256;
    std::int64_t size = 0;
};

// What a hold is good for when a restore needs its bytes.
enum class HoldUse {
    adopted,  // its bytes hash to its name: now an object too
    missing,  // no hold (never held, or dropped by gc)
    changed,  // written in place since (through the venv's name), or replaced: not the state's bytes
};

// Where the hold of the bytes a RECORD hash ("sha256=...") names would be; empty for another hash.
std::filesystem::path hold_path(const std::filesystem::path& store_root, const std::string& record_hash);

class Holds {
public:
    Holds(Database& db, std::filesystem::path store_root);

    std::filesystem::path path_of(const std::string& hex) const;  // holds/<64 hex>: one directory
    const std::filesystem::path& dir() const { return m_dir; }
    // The RECORD sha256s whose distributions have a layout (with `whole`: and every file held).
    std::set<std::string> held_records(bool whole = false);
    std::set<std::string> held_hashes();
    std::optional<nlohmann::json> layout(const std::string& record);
    // The files of the distribution with this RECORD that got no hold; nullopt: never held.
    std::optional<std::int64_t> unheld(const std::string& record);
    std::optional<HeldFile> find(const std::string& hex);
    // A distribution's layout and the holds made for it (in the caller's SQL transaction: one for a state).
    void save(const std::string& record, const nlohmann::json& layout, std::int64_t unheld,
              const std::vector<HeldFile>& held);
    // The hold of each of `hexes`, checked (its bytes hashed, side by side), becomes the object
    // of that name (which the store lacks): linked where the hold is its inode's only name, else
    // copied. What each hold was good for, by hash.
    std::map<std::string, HoldUse> adopt(const std::set<std::string>& hexes, ObjectStore& objects);
    // Indexes a loose object file of `hex` that has no row (an adopt cut short between its link
    // and its row): not trusted, so the engine hashes it before use.
    void index_object(const std::string& hex, std::int64_t size);
    // Drops every layout whose RECORD is not in `records`, then every hold no layout left names
    // (rows first, then their files); with `sweep`, any file under holds/ without a row too (a
    // hold cut short, a gc killed between the two). Returns the holds dropped.
    std::int64_t keep_only(const std::set<std::string>& records, bool sweep);

private:
    Database& m_db;
    std::filesystem::path m_dir;
};

} // namespace venvtx
