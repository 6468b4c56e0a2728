// History: reading transactions, their entries, and the newest of a kind.
#include "venvtx/store/history.hpp"

#include "history_rows.hpp"

#include <algorithm>

namespace venvtx {

using namespace history_rows;

TransactionRecord History::read_transaction(Statement& row, bool with_packages) {
    TransactionRecord record;
    record.id = row.integer(0);
    record.kind = row.text(1);
    record.state = tx_state_from(row.text(2)).value_or(TxState::interrupted);
    record.started_at = row.text(3);
    record.finished_at = row.optional_text(4);
    record.argv = nlohmann::json::parse(row.text(5));
    record.baseline = optional_json(row, 6);
    record.probe = optional_json(row, 7);
    record.undoes = row.optional_integer(8);
    record.undone_by = row.optional_integer(9);
    record.message = row.optional_text(10);
    if (!row.is_null(11)) {
        record.restored = row.integer(11) != 0;
    }
    if (auto unrestored = optional_json(row, 12)) {
        record.unrestored = unrestored->get<std::vector<std::string>>();
    }
    record.preview = optional_json(row, 13);
    record.live_probe = optional_json(row, 14);
    if (auto before = row.optional_text(15)) {
        record.pruned_from = tx_state_from(*before);
    }
    if (!row.is_null(16)) {
        record.files = {row.integer(18), row.integer(17), row.integer(16), row.integer(19)};
    } else {
        Statement counts = m_db.prepare(k_file_counts);
        counts.bind(1, record.id);
        if (counts.step()) {
            record.files = {counts.integer(2), counts.integer(1), counts.integer(0), counts.integer(3)};
        }
    }
    record.state_before = row.optional_text(20);
    record.state_after = row.optional_text(21);
    record.user = row.optional_text(22).value_or("");
    record.host = row.optional_text(23).value_or("");
    record.venvtx_version = row.optional_text(24).value_or("");
    record.details = optional_json(row, 25);
    if (with_packages) {
        Statement packages = m_db.prepare("SELECT name, before, after FROM packages WHERE tx_id = ? ORDER BY rowid");
        packages.bind(1, record.id);
        while (packages.step()) {
            record.packages.push_back({packages.text(0), packages.optional_text(1), packages.optional_text(2)});
        }
    }
    return record;
}

std::vector<TransactionRecord> History::list(std::optional<std::int64_t> limit) {
    Statement query = m_db.prepare(std::string(k_select_transaction) + " ORDER BY id DESC LIMIT ?");
    query.bind(1, limit.value_or(-1));
    std::vector<TransactionRecord> records;
    Statement count = m_db.prepare("SELECT COUNT(*) FROM transactions");
    count.step();
    records.reserve(static_cast<std::size_t>(std::min(count.integer(0), limit.value_or(count.integer(0)))));
    while (query.step()) {
        records.push_back(read_transaction(query, false));
    }
    if (records.empty()) {
        return records;
    }
    // Every listed transaction's packages in one query (not one per transaction).
    Statement packages = m_db.prepare(
        "SELECT tx_id, name, before, after FROM packages WHERE tx_id BETWEEN ? AND ? ORDER BY rowid");
    packages.bind(1, records.back().id).bind(2, records.front().id);
    while (packages.step()) { // records are by id, newest first
        std::int64_t tx = packages.integer(0);
        auto found = std::lower_bound(records.begin(), records.end(), tx,
                                      [](const TransactionRecord& record, std::int64_t id) { return record.id > id; });
        if (found != records.end() && found->id == tx) {
            found->packages.push_back({packages.text(1), packages.optional_text(2), packages.optional_text(3)});
        }
    }
    return records;
}

std::optional<TransactionRecord> History::find(std::int64_t id) {
    Statement query = m_db.prepare(std::string(k_select_transaction) + " WHERE id = ?");
    query.bind(1, id);
    if (!query.step()) {
        return std::nullopt;
    }
    return read_transaction(query);
}

std::vector<Entry> History::entries(std::int64_t tx) {
    Statement query = m_db.prepare(
        "SELECT id, path, before_type, before_mode, before_size, before_mtime_ns, before_link, "
        "before_object, after_type, after_mode, after_size, after_mtime_ns, after_link, "
        "after_object, progress, owner, before_uid, before_gid, after_uid, after_gid FROM entries WHERE tx_id = ? "
        "ORDER BY id");
    query.bind(1, tx);
    std::vector<Entry> entries;
    while (query.step()) {
        Entry entry;
        entry.id = query.integer(0);
        entry.path = query.text(1);
        entry.before = read_state(query, 2);
        entry.after = read_state(query, 8);
        entry.progress = entry_progress_from(query.text(14));
        entry.owner = query.text(15);
        entry.before.uid = query.optional_integer(16).value_or(-1);
        entry.before.gid = query.optional_integer(17).value_or(-1);
        entry.after.uid = query.optional_integer(18).value_or(-1);
        entry.after.gid = query.optional_integer(19).value_or(-1);
        entries.push_back(std::move(entry));
    }
    return entries;
}

std::optional<TransactionRecord> History::newest_where(const char* condition) {
    Statement query = m_db.prepare(std::string(k_select_transaction) + " WHERE " + condition +
                                   " ORDER BY id DESC LIMIT 1");
    if (!query.step()) {
        return std::nullopt;
    }
    return read_transaction(query);
}

std::optional<TransactionRecord> History::newest_undoable() {
    return newest_where("state = 'committed' AND undone_by IS NULL AND kind != 'rollback'");
}

std::optional<TransactionRecord> History::newest_redoable() {
    // A redo (a rollback of a rollback) is not itself redoable: redoing twice is nothing to redo.
    return newest_where("state = 'committed' AND undone_by IS NULL AND kind = 'rollback' AND undoes IN "
                        "(SELECT id FROM transactions WHERE kind != 'rollback')");
}

std::optional<TransactionRecord> History::newest_passing_probe() {
    return newest_where("json_extract(probe, '$.passed') = 1 OR json_extract(baseline, '$.passed') = 1");
}

std::vector<TransactionRecord> History::unfinished() {
    Statement query = m_db.prepare(std::string(k_select_transaction) +
                                   " WHERE state IN ('started', 'applied', 'interrupted') ORDER BY id");
    std::vector<TransactionRecord> records;
    while (query.step()) {
        records.push_back(read_transaction(query));
    }
    return records;
}

} // namespace venvtx
