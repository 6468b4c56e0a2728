// The switch journal: SQL over the switches table.
#include "venvtx/store/switch_rows.hpp"

namespace venvtx {

namespace {

SwitchState state_named(const std::string& name) {
    return name == "done" ? SwitchState::done : name == "ready" ? SwitchState::ready : SwitchState::building;
}

} // namespace

void begin_switches(Database& db, const std::vector<SwitchRow>& rows) {
    SqlTransaction transaction(db);
    Statement insert = db.prepare("INSERT INTO switches (tx_id, phase, ordinal, unit, shadow, state, fresh) "
                                  "VALUES (?, ?, ?, ?, ?, 'building', ?)");
    std::int64_t ordinal = 0;
    for (const auto& row : rows) {
        insert.bind(1, row.tx).bind(2, static_cast<std::int64_t>(row.phase)).bind(3, ordinal++);
        insert.bind(4, row.unit).bind(5, row.shadow).bind(6, static_cast<std::int64_t>(row.fresh)).run();
    }
    transaction.commit();
}

void mark_switches_ready(Database& db, const std::vector<SwitchRow>& rows) {
    SqlTransaction transaction(db);
    Statement update = db.prepare("UPDATE switches SET state = 'ready', old_ino = ?, new_ino = ? "
                                  "WHERE tx_id = ? AND phase = ? AND unit = ?");
    for (const auto& row : rows) {
        update.bind(1, row.old_ino).bind(2, row.new_ino).bind(3, row.tx);
        update.bind(4, static_cast<std::int64_t>(row.phase)).bind(5, row.unit).run();
    }
    transaction.commit();
}

void mark_switches_done(Database& db, std::int64_t tx, int phase) {
    db.prepare("UPDATE switches SET state = 'done' WHERE tx_id = ? AND phase = ?")
        .bind(1, tx)
        .bind(2, static_cast<std::int64_t>(phase))
        .run();
}

void forget_switches(Database& db, std::int64_t tx, int phase) {
    db.prepare("DELETE FROM switches WHERE tx_id = ? AND phase = ?")
        .bind(1, tx)
        .bind(2, static_cast<std::int64_t>(phase))
        .run();
}

std::set<std::string> switched_units(Database& db, std::int64_t tx) {
    Statement query = db.prepare("SELECT unit FROM switches WHERE tx_id = ? AND state = 'done'");
    query.bind(1, tx);
    std::set<std::string> units;
    while (query.step()) {
        units.insert(query.text(0));
    }
    return units;
}

std::vector<SwitchRow> switches_of(Database& db, std::int64_t tx) {
    Statement query = db.prepare("SELECT phase, unit, shadow, state, fresh, old_ino, new_ino FROM switches "
                                 "WHERE tx_id = ? ORDER BY phase, ordinal");
    query.bind(1, tx);
    std::vector<SwitchRow> rows;
    while (query.step()) {
        rows.push_back({tx, static_cast<int>(query.integer(0)), query.text(1), query.text(2),
                        state_named(query.text(3)), query.integer(4) != 0, query.integer(5), query.integer(6)});
    }
    return rows;
}

} // namespace venvtx
