// Pending captures: SQL over pending_captures and entries.
#include "venvtx/store/pending_captures.hpp"

namespace venvtx {

void insert_pending(Database& db, const std::vector<PendingCapture>& pending) {
    Statement insert = db.prepare("INSERT OR REPLACE INTO pending_captures (entry_id, dev, ino, size, mtime_ns, "
                                  "ctime_ns, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?)");
    for (const auto& row : pending) {
        insert.bind(1, row.entry_id).bind(2, row.key.dev).bind(3, row.key.ino).bind(4, row.key.size);
        insert.bind(5, row.key.mtime_ns).bind(6, row.key.ctime_ns);
        insert.bind(7, row.content_hash).run();
    }
}

std::vector<PendingCapture> pending_of(Database& db, std::int64_t tx) {
    Statement query = db.prepare("SELECT p.entry_id, e.path, p.dev, p.ino, p.size, p.mtime_ns, p.ctime_ns, "
                                 "p.content_hash FROM "
                                 "pending_captures p JOIN entries e ON e.id = p.entry_id WHERE e.tx_id = ? "
                                 "ORDER BY p.entry_id");
    query.bind(1, tx);
    std::vector<PendingCapture> rows;
    while (query.step()) {
        rows.push_back({query.integer(0), query.text(1),
                        {query.integer(2), query.integer(3), query.integer(4), query.integer(5), query.integer(6)},
                        query.text(7)});
    }
    return rows;
}

void rekey_pending(Database& db, std::int64_t entry_id, const InodeKey& key) {
    db.prepare("UPDATE pending_captures SET dev = ?, ino = ?, size = ?, mtime_ns = ?, ctime_ns = ? WHERE entry_id = ?")
        .bind(1, key.dev)
        .bind(2, key.ino)
        .bind(3, key.size)
        .bind(4, key.mtime_ns)
        .bind(5, key.ctime_ns)
        .bind(6, entry_id)
        .run();
}

void retake_pending(Database& db, std::int64_t entry_id, const InodeKey& key, const std::string& content_hash) {
    rekey_pending(db, entry_id, key);
    db.prepare("UPDATE pending_captures SET content_hash = ? WHERE entry_id = ?").bind(1, content_hash).bind(2, entry_id).run();
}

void forget_pending(Database& db, std::int64_t tx) {
    db.prepare("DELETE FROM pending_captures WHERE entry_id IN (SELECT id FROM entries WHERE tx_id = ?)")
        .bind(1, tx)
        .run();
}

std::vector<std::int64_t> transactions_with_pending(Database& db) {
    Statement query = db.prepare("SELECT DISTINCT e.tx_id FROM pending_captures p JOIN entries e ON e.id = p.entry_id "
                                 "ORDER BY e.tx_id");
    std::vector<std::int64_t> ids;
    while (query.step()) {
        ids.push_back(query.integer(0));
    }
    return ids;
}

PendingTotals pending_totals(Database& db) {
    // Pruning deletes a pruned transaction's rows (store/pruning.cpp): every row counts.
    Statement query = db.prepare("SELECT COALESCE(SUM(size), 0), COUNT(*) FROM pending_captures");
    query.step();
    return {static_cast<std::uint64_t>(query.integer(0)), query.integer(1)};
}

} // namespace venvtx
