// The FactCache kept in the index (file_facts, migration 0008): facts planning read from venv
// files (a dist-info's METADATA, a shared object's dynamic section) by venv-relative path with
// the file's InodeKey, used only while the file's current key matches all of it. A file changed
// in the last two seconds is not kept (a change within the same clock tick would not move its
// key). Without a store, every lookup misses and nothing is kept.
#pragma once

#include "venvtx/core/fact_cache.hpp"
#include "venvtx/store/store.hpp"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace venvtx {

class IndexedFacts : public FactCache {
public:
    explicit IndexedFacts(Store* store);

    std::optional<std::string> find(const std::string& path, const std::string& kind,
                                    const InodeKey& key) const override;
    void keep(const std::string& path, const std::string& kind, const InodeKey& key, std::string facts) override;
    // Writes what was kept since the last save and forgets rows nobody asked for (their files
    // are gone: a plan asks for every one), in one SQL transaction. Throws on an SQLite error.
    void save();

private:
    struct Row {
        std::string kind;
        InodeKey key;
        std::string facts;
    };
    Store* m_store;
    std::unordered_map<std::string, Row> m_rows;
    std::map<std::string, Row> m_new;
    mutable std::unordered_set<std::string> m_asked;
};

} // namespace venvtx
