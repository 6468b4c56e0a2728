// HistorySession: open the store, take both locks if they are free, check the venv's state.
#include "venvtx/ops/history_session.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_holds.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/state/venv_binding.hpp"

#include <chrono>
#include <cstdio>

namespace venvtx {

std::string no_history_message(const std::filesystem::path& store_root) {
    return "no venvtx history yet in " + store_root.string() + " (`venvtx stamp` records the venv's state as it is)";
}

HistorySession::HistorySession(const Context& context, bool create, double wait_s) : m_root(context.store_root) {
    if (!create && !Store::exists(context.store_root)) {
        return;
    }
    m_store.emplace(context.store_root, create);
    if (create) {
        m_store->require_writable();
    }
    bind_store(*m_store, context.layout);
    if (!m_store->db().read_only()) {
        try {
            m_lock.emplace(context.store_root, context.layout.root, create ? wait_s : 0.0);
        } catch (const Error& error) {
            if (error.code() != ExitCode::locked || create) {
                throw;
            }
        }
    }
    auto started = std::chrono::steady_clock::now();
    if (m_lock && m_store->history().unfinished().empty()) {
        m_check = check_state(context.layout, *m_store);
        say_held(context.out, hold_state(context.layout, *m_store, m_check->now));
        m_recorded = true;
    } else {
        m_check = StateCheck{observe_state(context.layout, m_store->db()), std::nullopt};
        m_why_not = m_store->db().read_only() ? "this user cannot write the store"
                    : !m_lock                 ? "another venvtx holds the venv's lock"
                                              : "an interrupted transaction waits for `venvtx recover`";
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    char said[96];
    std::snprintf(said, sizeof said, "state check: %.2f ms, %zu distributions%s", ms, m_check->now.dists.size(),
                  m_check->outside ? ", a change made outside venvtx recorded" : "");
    context.out.debug(said);
}

std::optional<UnrecordedChange> HistorySession::unrecorded() {
    if (m_recorded || !m_store) {
        return std::nullopt;
    }
    std::optional<std::string> last = m_store->history().last_state();
    std::optional<VenvState> state = last ? load_state(m_store->db(), *last) : std::nullopt;
    if (!state || state->id == m_check->now.id) {
        return std::nullopt;
    }
    return UnrecordedChange{diff_states(m_store->db(), *state, m_check->now, false, false), m_why_not};
}

Store& HistorySession::store() {
    if (!m_store) {
        throw usage_error(no_history_message(m_root));
    }
    return *m_store;
}

} // namespace venvtx
