// IndexedFacts: file_facts rows (migration 0008), loaded once, written back in one transaction.
#include "venvtx/store/indexed_facts.hpp"

#include <algorithm>
#include <ctime>

namespace venvtx {

IndexedFacts::IndexedFacts(Store* store) : m_store(store) {
    if (!m_store) {
        return;
    }
    Statement query =
        m_store->db().prepare("SELECT path, kind, dev, ino, size, mtime_ns, ctime_ns, facts FROM file_facts");
    while (query.step()) {
        InodeKey key{query.integer(2), query.integer(3), query.integer(4), query.integer(5), query.integer(6)};
        m_rows.emplace(query.text(0), Row{query.text(1), key, query.text(7)});
    }
}

std::optional<std::string> IndexedFacts::find(const std::string& path, const std::string& kind, const InodeKey& key) const {
    m_asked.insert(path);
    auto found = m_rows.find(path);
    if (found == m_rows.end() || found->second.kind != kind || !(found->second.key == key)) {
        return std::nullopt;
    }
    return found->second.facts;
}

void IndexedFacts::keep(const std::string& path, const std::string& kind, const InodeKey& key, std::string facts) {
    if (!m_store || !settled(key)) {
        return;
    }
    Row row{kind, key, std::move(facts)};
    m_rows[path] = row;
    m_new[path] = std::move(row);
}

void IndexedFacts::save() {
    std::vector<std::string> stale; // a plan asks for every dist-info and shared object: the rest are gone
    for (const auto& row : m_rows) {
        if (m_asked.count(row.first) == 0) {
            stale.push_back(row.first);
        }
    }
    if (!m_store || (m_new.empty() && stale.empty())) {
        return;
    }
    SqlTransaction transaction(m_store->db());
    Statement forget = m_store->db().prepare("DELETE FROM file_facts WHERE path = ?");
    for (const auto& path : stale) {
        forget.bind(1, path).run();
        m_rows.erase(path);
    }
    Statement upsert = m_store->db().prepare(
        "INSERT OR REPLACE INTO file_facts (path, kind, dev, ino, size, mtime_ns, ctime_ns, facts) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& [path, row] : m_new) {
        upsert.bind(1, path).bind(2, row.kind).bind(3, row.key.dev).bind(4, row.key.ino).bind(5, row.key.size);
        upsert.bind(6, row.key.mtime_ns).bind(7, row.key.ctime_ns).bind(8, row.facts).run();
    }
    transaction.commit();
    m_new.clear();
}

} // namespace venvtx
