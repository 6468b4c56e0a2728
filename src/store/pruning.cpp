// object_uses, store_totals, prune_through: SQL over transactions, entries and objects.
#include "venvtx/store/pruning.hpp"

#include "venvtx/core/clock.hpp"


namespace venvtx {

namespace {

// Only a before-state's bytes are ever put back (a rollback restores the before-states of what
// it undoes, a redo those of the rollback); an after-state's hash is only compared with.
const char* k_newest_use =
    "SELECT o.sha256, o.size,"
    " COALESCE((SELECT MAX(e.tx_id) FROM entries e JOIN transactions t ON t.id = e.tx_id"
    "           WHERE t.state != 'pruned' AND e.before_object = o.sha256), 0)"
    " FROM objects o";

} // namespace

std::vector<ObjectUse> object_uses(Database& db) {
    std::vector<ObjectUse> uses;
    Statement query = db.prepare(k_newest_use);
    while (query.step()) {
        uses.push_back({query.text(0), static_cast<std::uint64_t>(query.integer(1)), query.integer(2)});
    }
    return uses;
}

std::vector<ObjectUse> pending_uses(Database& db) {
    std::vector<ObjectUse> uses;
    Statement query = db.prepare("SELECT p.content_hash, p.size, e.tx_id FROM pending_captures p"
                                 " JOIN entries e ON e.id = p.entry_id");
    while (query.step()) {
        uses.push_back({query.text(0), static_cast<std::uint64_t>(query.integer(1)), query.integer(2)});
    }
    return uses;
}

std::vector<TransactionAge> transaction_ages(Database& db) {
    std::vector<TransactionAge> ages;
    Statement query = db.prepare("SELECT id, state, started_at FROM transactions ORDER BY id");
    while (query.step()) {
        std::string state = query.text(1);
        bool counted = state == "committed" || state == "undone";
        bool finished = counted || state == "rolled_back" || state == "aborted" || state == "recorded";
        ages.push_back({query.integer(0), state == "pruned", finished, counted, seconds_since(query.text(2)).value_or(0)});
    }
    return ages;
}

StoreTotals store_totals(Database& db) {
    Statement query = db.prepare("SELECT COALESCE(SUM(size), 0), COUNT(*) FROM objects");
    query.step();
    return {static_cast<std::uint64_t>(query.integer(0)), query.integer(1)};
}

std::vector<std::string> prune_through(Database& db, std::int64_t last) {
    SqlTransaction transaction(db);
    db.prepare("UPDATE transactions SET pruned_from = state, state = 'pruned' WHERE id <= ? AND state IN "
               "('committed', 'undone', 'rolled_back', 'aborted')")
        .bind(1, last)
        .run();
    // A pruned transaction's pending captures are never hashed: their staged files go with its staging.
    db.prepare("DELETE FROM pending_captures WHERE entry_id IN (SELECT e.id FROM entries e JOIN transactions t ON "
               "t.id = e.tx_id WHERE t.state = 'pruned')")
        .run();
    std::vector<std::string> dropped;
    for (const auto& use : object_uses(db)) {
        if (use.newest_tx == 0) {
            dropped.push_back(use.hex);
        }
    }
    Statement drop = db.prepare("DELETE FROM objects WHERE sha256 = ?");
    Statement doom = db.prepare("INSERT OR IGNORE INTO doomed_objects (sha256) VALUES (?)");
    for (const auto& hex : dropped) {
        drop.bind(1, hex).run();
        doom.bind(1, hex).run();
    }
    transaction.commit();
    return dropped;
}

std::vector<std::string> doomed_objects(Database& db) {
    std::vector<std::string> doomed;
    Statement query = db.prepare("SELECT sha256 FROM doomed_objects WHERE sha256 NOT IN (SELECT sha256 FROM objects)");
    while (query.step()) {
        doomed.push_back(query.text(0));
    }
    return doomed;
}

void forget_doomed(Database& db) {
    db.prepare("DELETE FROM doomed_objects").run();
}

} // namespace venvtx
