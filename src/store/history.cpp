// History: SQL for transactions, packages, entries and objects.
#include "venvtx/store/history.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/identity.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/core/progress.hpp"

#include <algorithm>

namespace venvtx {

namespace {

const char* k_select_transaction =
    "SELECT id, kind, state, started_at, finished_at, argv, baseline, probe, undoes, undone_by, "
    "message, restored, unrestored, preview, live_probe, pruned_from, files_modified, files_removed, files_added, "
    "files_bytes, state_before, state_after, user, host, venvtx_version, details FROM transactions";

// A transaction's file counts from its entries: a leaf is anything but a directory or nothing.
const char* k_file_counts =
    "SELECT COALESCE(SUM(b AND a), 0), COALESCE(SUM(b AND NOT a), 0), COALESCE(SUM(a AND NOT b), 0), "
    "COALESCE(SUM(size), 0) FROM (SELECT before_type IN ('file', 'symlink', 'special') AS b, "
    "after_type IN ('file', 'symlink', 'special') AS a, "
    "MAX(COALESCE(before_size, 0), COALESCE(after_size, 0)) AS size FROM entries WHERE tx_id = ?) WHERE a OR b";

void bind_state(Statement& statement, int first, const NodeState& state) {
    statement.bind(first, std::string(node_type_name(state.type)))
        .bind(first + 1, static_cast<std::int64_t>(state.mode))
        .bind(first + 2, static_cast<std::int64_t>(state.size))
        .bind(first + 3, state.mtime_ns);
    if (state.type == NodeType::symlink || state.type == NodeType::special) {
        statement.bind(first + 4, state.link_target);
    } else {
        statement.bind_null(first + 4);
    }
    if (state.object.empty()) {
        statement.bind_null(first + 5);
    } else {
        statement.bind(first + 5, state.object);
    }
}

NodeState read_state(const Statement& row, int first) {
    NodeState state;
    state.type = node_type_from_name(row.text(first));
    state.mode = static_cast<mode_t>(row.integer(first + 1));
    state.size = static_cast<std::uint64_t>(row.integer(first + 2));
    state.mtime_ns = row.integer(first + 3);
    state.link_target = row.text(first + 4);
    state.object = row.text(first + 5);
    return state;
}

std::optional<nlohmann::json> optional_json(const Statement& row, int column) {
    auto text = row.optional_text(column);
    return text ? std::optional<nlohmann::json>(nlohmann::json::parse(*text)) : std::nullopt;
}

} // namespace

void History::insert_entries(std::int64_t tx, std::vector<Entry>& entries) {
    Statement insert = m_db.prepare(
        "INSERT INTO entries (tx_id, path, before_type, before_mode, before_size, before_mtime_ns, "
        "before_link, before_object, after_type, after_mode, after_size, after_mtime_ns, "
        "after_link, after_object, progress, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?)");
    for (auto& entry : entries) {
        insert.bind(1, tx).bind(2, entry.path);
        bind_state(insert, 3, entry.before);
        bind_state(insert, 9, entry.after);
        insert.bind(15, std::string(to_string(entry.progress)));
        if (entry.owner.empty()) {
            insert.bind_null(16);
        } else {
            insert.bind(16, entry.owner);
        }
        insert.run();
        entry.id = m_db.last_insert_id();
    }
}

std::int64_t History::begin(const std::string& kind, const nlohmann::json& argv,
                            const std::vector<PackageChange>& packages, std::vector<Entry>& entries,
                            std::optional<std::int64_t> undoes, const std::optional<nlohmann::json>& details) {
    std::optional<std::string> state = observe_now();
    SqlTransaction transaction(m_db);
    std::int64_t id = insert_row(kind, "started", utc_now_iso8601(), argv, state, std::nullopt, details, true);
    if (undoes) {
        m_db.prepare("UPDATE transactions SET undoes = ? WHERE id = ?").bind(1, *undoes).bind(2, id).run();
    }
    Statement package = m_db.prepare("INSERT INTO packages (tx_id, name, before, after) VALUES (?, ?, ?, ?)");
    for (const auto& change : packages) {
        package.bind(1, id).bind(2, change.name).bind(3, change.before).bind(4, change.after).run();
    }
    insert_entries(id, entries);
    transaction.commit();
    return id;
}

std::int64_t History::record_aborted(const std::string& kind, const nlohmann::json& argv,
                                     const std::vector<PackageChange>& packages,
                                     const std::optional<nlohmann::json>& baseline, const std::string& message) {
    std::vector<Entry> none;
    std::int64_t id = begin(kind, argv, packages, none);
    if (baseline) {
        set_probe(id, "baseline", *baseline);
    }
    set_state(id, TxState::aborted, message);
    return id;
}

void History::set_state(std::int64_t id, TxState state, const std::optional<std::string>& message) {
    bool final = state == TxState::committed || state == TxState::rolled_back || state == TxState::aborted;
    std::optional<std::string> after = final ? observe_now() : std::nullopt;
    SqlTransaction transaction(m_db);
    write_state(id, state, message, after);
    transaction.commit();
}

void History::write_state(std::int64_t id, TxState state, const std::optional<std::string>& message,
                          const std::optional<std::string>& state_after) {
    // interrupted gets a finished_at too: it says when the attempt ended.
    bool terminal = state != TxState::started && state != TxState::applied;
    m_db.prepare("UPDATE transactions SET state = ?, finished_at = CASE WHEN ? THEN ? ELSE "
                 "finished_at END, message = COALESCE(?, message), state_after = COALESCE(?, state_after) "
                 "WHERE id = ?")
        .bind(1, std::string(to_string(state)))
        .bind(2, static_cast<std::int64_t>(terminal))
        .bind(3, utc_now_iso8601())
        .bind(4, message)
        .bind(5, state_after)
        .bind(6, id)
        .run();
    if (state_after) {
        note_last_state(*state_after);
    }
    if (terminal) { // the counts `log` prints, kept with the row (migration 0007)
        m_db.prepare(std::string("UPDATE transactions SET (files_modified, files_removed, files_added, files_bytes) = (") +
                     k_file_counts + ") WHERE id = ?")
            .bind(1, id)
            .bind(2, id)
            .run();
    }
}

std::int64_t History::insert_row(const std::string& kind, const char* state, const std::string& started_at,
                                 const nlohmann::json& argv, const std::optional<std::string>& state_before,
                                 const std::optional<std::string>& state_after,
                                 const std::optional<nlohmann::json>& details, bool sets_last_state) {
    m_db.prepare("INSERT INTO transactions (kind, state, started_at, argv, state_before, state_after, user, host, "
                 "venvtx_version, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, kind)
        .bind(2, std::string(state))
        .bind(3, started_at)
        .bind(4, stored_json_text(argv))
        .bind(5, state_before)
        .bind(6, state_after)
        .bind(7, user_name())
        .bind(8, host_name())
        .bind(9, std::string(VENVTX_VERSION))
        .bind(10, details ? std::optional(stored_json_text(*details)) : std::nullopt)
        .run();
    std::int64_t id = m_db.last_insert_id();
    if (sets_last_state && (state_after || state_before)) {
        note_last_state(state_after ? *state_after : *state_before);
    }
    return id;
}

std::int64_t History::record(const RecordedEntry& entry) {
    SqlTransaction transaction(m_db);
    std::int64_t id = insert_row(entry.kind, "recorded", entry.started_at, entry.argv, entry.state_before,
                                 entry.state_after, entry.details, entry.sets_last_state);
    m_db.prepare("UPDATE transactions SET finished_at = ?, message = ? WHERE id = ?")
        .bind(1, entry.finished_at)
        .bind(2, entry.message)
        .bind(3, id)
        .run();
    Statement package = m_db.prepare("INSERT INTO packages (tx_id, name, before, after) VALUES (?, ?, ?, ?)");
    for (const auto& change : entry.packages) {
        package.bind(1, id).bind(2, change.name).bind(3, change.before).bind(4, change.after).run();
    }
    transaction.commit();
    return id;
}

void History::observe_states_with(std::function<std::optional<std::string>()> observer) {
    m_observe = std::move(observer);
}

std::optional<std::string> History::observe_now() { return m_observe ? m_observe() : std::nullopt; }

void History::note_last_state(const std::string& state) {
    m_db.prepare("INSERT OR REPLACE INTO venv_facts (name, value) VALUES ('state.last', ?), ('state.recorded_at', ?)")
        .bind(1, state)
        .bind(2, utc_now_iso8601())
        .run();
}

std::optional<std::string> History::venv_fact(const char* name) {
    Statement query = m_db.prepare("SELECT value FROM venv_facts WHERE name = ?");
    query.bind(1, std::string(name));
    return query.step() ? std::optional(query.text(0)) : std::nullopt;
}

std::optional<std::string> History::last_state() { return venv_fact("state.last"); }

std::optional<std::string> History::last_recorded_at() { return venv_fact("state.recorded_at"); }

void History::set_message(std::int64_t id, const std::string& message) {
    m_db.prepare("UPDATE transactions SET message = ? WHERE id = ?").bind(1, message).bind(2, id).run();
}

void History::set_restored(std::int64_t id, const std::vector<std::string>& unrestored) {
    m_db.prepare("UPDATE transactions SET restored = ?, unrestored = ? WHERE id = ?")
        .bind(1, static_cast<std::int64_t>(unrestored.empty()))
        .bind(2, stored_json_text(nlohmann::json(unrestored)))
        .bind(3, id)
        .run();
}

void History::set_probe(std::int64_t id, const char* column, const nlohmann::json& report) {
    std::string sql = std::string("UPDATE transactions SET ") + column + " = ? WHERE id = ?";
    m_db.prepare(sql).bind(1, stored_json_text(report)).bind(2, id).run();
}

void History::commit(std::int64_t id, std::optional<std::int64_t> undoes, const std::vector<std::string>& moved_out,
                     const std::vector<std::int64_t>& undone_too) {
    std::optional<std::string> after = observe_now();
    SqlTransaction transaction(m_db);
    write_state(id, TxState::committed, std::nullopt, after);
    Statement forget = m_db.prepare("DELETE FROM objects WHERE sha256 = ?");
    for (const auto& hex : moved_out) {
        forget.bind(1, hex).run();
    }
    if (undoes) {
        forget_pending(m_db, *undoes);
        // What this redo captured is what the redone transaction's before-states were.
        m_db.prepare("UPDATE entries SET before_object = (SELECT r.before_object FROM entries r WHERE r.tx_id = ?1 "
                     "AND r.path = entries.path AND r.before_type = 'file' AND r.before_size = entries.before_size) "
                     "WHERE before_type = 'file' AND before_object IS NULL AND tx_id = "
                     "(SELECT t.undoes FROM transactions t JOIN transactions r ON r.id = t.undoes "
                     "WHERE t.id = ?2 AND t.kind = 'rollback' AND r.kind = 'remove')")
            .bind(1, id)
            .bind(2, *undoes)
            .run();
        // Undoing a rollback redoes what it had undone: those transactions are live again.
        m_db.prepare("UPDATE transactions SET state = 'committed', undone_by = NULL WHERE undone_by = ?1 AND "
                     "(SELECT kind FROM transactions WHERE id = ?1) = 'rollback'")
            .bind(1, *undoes)
            .run();
        Statement undone = m_db.prepare("UPDATE transactions SET undone_by = ?, state = 'undone' WHERE id = ?");
        undone.bind(1, id).bind(2, *undoes).run();
        for (std::int64_t older : undone_too) {
            undone.bind(1, id).bind(2, older).run();
        }
    }
    transaction.commit();
}

void History::save_entries(std::int64_t tx, const std::vector<Entry>& entries,
                           const std::vector<std::pair<std::string, std::uint64_t>>& new_objects,
                           const std::vector<PendingCapture>& pending) {
    Progress::Phase phase("indexing captured files", entries.size(), "paths");
    SqlTransaction transaction(m_db);
    Statement object = m_db.prepare("INSERT OR IGNORE INTO objects (sha256, size, created_by) VALUES (?, ?, ?)");
    for (const auto& [hex, size] : new_objects) {
        object.bind(1, hex).bind(2, static_cast<std::int64_t>(size)).bind(3, tx).run();
    }
    Statement update = m_db.prepare(
        "UPDATE entries SET before_object = ?, after_object = ?, progress = ?, before_type = ?, "
        "before_size = ?, before_mtime_ns = ? WHERE id = ?");
    for (const auto& entry : entries) {
        update.bind(1, entry.before.object.empty() ? std::nullopt : std::optional(entry.before.object))
            .bind(2, entry.after.object.empty() ? std::nullopt : std::optional(entry.after.object))
            .bind(3, std::string(to_string(entry.progress)))
            .bind(4, std::string(node_type_name(entry.before.type)))
            .bind(5, static_cast<std::int64_t>(entry.before.size))
            .bind(6, entry.before.mtime_ns)
            .bind(7, entry.id)
            .run();
        Progress::advance(1);
    }
    insert_pending(m_db, pending);
    transaction.commit();
}

void History::set_packages(std::int64_t tx, const std::vector<PackageChange>& packages) {
    SqlTransaction transaction(m_db);
    m_db.prepare("DELETE FROM packages WHERE tx_id = ?").bind(1, tx).run();
    Statement insert = m_db.prepare("INSERT INTO packages (tx_id, name, before, after) VALUES (?, ?, ?, ?)");
    for (const auto& change : packages) {
        insert.bind(1, tx).bind(2, change.name).bind(3, change.before).bind(4, change.after).run();
    }
    transaction.commit();
}

void History::finish_snapshot(std::int64_t tx, const std::vector<std::int64_t>& unchanged,
                              std::vector<Entry>& changed, std::vector<Entry>& added,
                              const std::vector<std::pair<std::string, std::uint64_t>>& new_objects) {
    SqlTransaction transaction(m_db);
    Statement drop = m_db.prepare("DELETE FROM entries WHERE id = ?");
    for (std::int64_t id : unchanged) {
        drop.bind(1, id).run();
    }
    Statement update = m_db.prepare(
        "UPDATE entries SET after_type = ?, after_mode = ?, after_size = ?, after_mtime_ns = ?, "
        "after_link = ?, after_object = ?, before_object = ?, progress = ? WHERE id = ?");
    for (const auto& entry : changed) {
        bind_state(update, 1, entry.after);
        update.bind(7, entry.before.object.empty() ? std::nullopt : std::optional(entry.before.object))
            .bind(8, std::string(to_string(entry.progress)))
            .bind(9, entry.id)
            .run();
    }
    insert_entries(tx, added);
    Statement object = m_db.prepare("INSERT OR IGNORE INTO objects (sha256, size, created_by) VALUES (?, ?, ?)");
    for (const auto& [hex, size] : new_objects) {
        object.bind(1, hex).bind(2, static_cast<std::int64_t>(size)).bind(3, tx).run();
    }
    transaction.commit();
}

void History::sync_each_commit(bool sync) {
    m_db.exec(sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
}

void History::add_entries(std::int64_t tx, std::vector<Entry>& entries) {
    SqlTransaction transaction(m_db);
    insert_entries(tx, entries);
    transaction.commit();
}

void History::forget_objects(const std::vector<std::string>& hexes) {
    SqlTransaction transaction(m_db);
    Statement remove = m_db.prepare("DELETE FROM objects WHERE sha256 = ?");
    for (const auto& hex : hexes) {
        remove.bind(1, hex).run();
    }
    transaction.commit();
}

std::set<std::string> History::referenced_only_by(std::int64_t tx, const std::set<std::string>& hexes) {
    Statement elsewhere = m_db.prepare(
        "SELECT 1 FROM entries e JOIN transactions t ON t.id = e.tx_id WHERE e.before_object = ?1 AND e.tx_id != ?2 "
        "AND t.state != 'pruned' UNION ALL SELECT 1 FROM entries e JOIN transactions t ON t.id = e.tx_id "
        "WHERE e.after_object = ?1 AND e.tx_id != ?2 AND t.state != 'pruned' LIMIT 1");
    std::set<std::string> only;
    for (const auto& hex : hexes) {
        elsewhere.bind(1, hex).bind(2, tx);
        if (!elsewhere.step()) {
            only.insert(hex);
        }
        elsewhere.reset();
    }
    return only;
}

std::vector<std::string> History::objects_created_by(std::int64_t tx) {
    Statement query = m_db.prepare("SELECT sha256 FROM objects WHERE created_by = ?");
    query.bind(1, tx);
    std::vector<std::string> hexes;
    while (query.step()) {
        hexes.push_back(query.text(0));
    }
    return hexes;
}

bool History::has_object(const std::string& hex) {
    Statement query = m_db.prepare("SELECT 1 FROM objects WHERE sha256 = ?");
    query.bind(1, hex);
    return query.step();
}

std::vector<std::pair<std::string, std::string>> History::object_references() {
    Statement query = m_db.prepare(
        "SELECT o.sha256, (SELECT COALESCE(e.owner || ', ', '') || 'tx ' || e.tx_id || ': ' || "
        "e.path FROM entries e WHERE "
        "e.before_object = o.sha256 OR e.after_object = o.sha256 ORDER BY e.tx_id DESC LIMIT 1) "
        "FROM objects o ORDER BY o.sha256");
    std::vector<std::pair<std::string, std::string>> references;
    while (query.step()) {
        references.emplace_back(query.text(0), query.text(1));
    }
    return references;
}

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
        "after_object, progress, owner FROM entries WHERE tx_id = ? ORDER BY id");
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
