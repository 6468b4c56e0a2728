// History: entries that record the venv's state (outside changes, stamps, runs), the observer
// every transaction asks at its start and end, and the store's facts about its venv.
#include "venvtx/store/history.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/identity.hpp"
#include "venvtx/core/json_text.hpp"
#include "venvtx/store/venv_facts.hpp"

namespace venvtx {

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
    set_venv_facts(m_db, {{"state.last", state}, {"state.recorded_at", utc_now_iso8601()}});
}

std::optional<std::string> History::last_state() { return venv_fact(m_db, "state.last"); }

std::optional<std::string> History::last_recorded_at() { return venv_fact(m_db, "state.recorded_at"); }

} // namespace venvtx
