// History: writing transactions, packages, entries and objects (reading: history_reading.cpp;
// entries that record states: history_states.cpp).
#include "venvtx/store/history.hpp"

#include "history_rows.hpp"
#include "venvtx/core/clock.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/core/progress.hpp"

#include <algorithm>

namespace venvtx {

namespace {

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

void bind_owner(Statement& statement, int first, const NodeState& state) {
    for (int i = 0; i < 2; ++i) {
        std::int64_t id = i == 0 ? state.uid : state.gid;
        if (id < 0) {
            statement.bind_null(first + i);
        } else {
            statement.bind(first + i, id);
        }
    }
}

} // namespace

void History::insert_entries(std::int64_t tx, std::vector<Entry>& entries) {
    Statement insert = m_db.prepare(
        "INSERT INTO entries (tx_id, path, before_type, before_mode, before_size, before_mtime_ns, "
        "before_link, before_object, after_type, after_mode, after_size, after_mtime_ns, "
        "after_link, after_object, progress, owner, before_uid, before_gid, after_uid, after_gid) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
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
        bind_owner(insert, 17, entry.before);
        bind_owner(insert, 19, entry.after);
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
                     history_rows::k_file_counts + ") WHERE id = ?")
            .bind(1, id)
            .bind(2, id)
            .run();
    }
}

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

void History::discard_empty(std::int64_t id) {
    SqlTransaction transaction(m_db);
    Statement count = m_db.prepare("SELECT count(*) FROM entries WHERE tx_id = ?");
    count.bind(1, id);
    if (count.step() && count.integer(0) != 0) {
        throw Error(ExitCode::internal, "tx " + std::to_string(id) + " journaled paths: it cannot be discarded");
    }
    m_db.prepare("DELETE FROM packages WHERE tx_id = ?").bind(1, id).run();
    m_db.prepare("UPDATE objects SET created_by = NULL WHERE created_by = ?").bind(1, id).run();
    m_db.prepare("DELETE FROM transactions WHERE id = ?").bind(1, id).run();
    transaction.commit();
}

void History::add_details(std::int64_t id, const nlohmann::json& more) {
    SqlTransaction transaction(m_db);
    nlohmann::json details = nlohmann::json::object();
    Statement read = m_db.prepare("SELECT details FROM transactions WHERE id = ?");
    read.bind(1, id);
    if (read.step() && !read.is_null(0)) {
        details = nlohmann::json::parse(read.text(0), nullptr, false);
        if (!details.is_object()) {
            details = nlohmann::json::object();
        }
    }
    details.update(more);
    m_db.prepare("UPDATE transactions SET details = ? WHERE id = ?").bind(1, stored_json_text(details)).bind(2, id).run();
    transaction.commit();
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
        // (an outside entry it had undone is a record again, as it was)
        m_db.prepare("UPDATE transactions SET state = CASE kind WHEN 'outside' THEN 'recorded' ELSE 'committed' END, "
                     "undone_by = NULL WHERE undone_by = ?1 AND "
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

} // namespace venvtx
