// MutationSession: the locks, then recover-first, then the venv's state against the history.
#include "venvtx/txn/mutation_session.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_check.hpp"
#include "venvtx/state/state_holds.hpp"
#include "venvtx/state/venv_binding.hpp"
#include "venvtx/store/space_reserve.hpp"
#include "venvtx/txn/recover.hpp"

namespace venvtx {

MutationSession::MutationSession(const Context& context, std::optional<double> wait_s)
    : m_store(context.store_root, true), m_lock(context.store_root, context.layout.root, wait_s) {
    m_store.require_writable();
    bind_store(m_store, context.layout);
    VenvLayout layout = context.layout;
    // Every state recorded holds its files (state/state_holds.hpp): at the start of the command,
    // and at each transaction's start and end.
    m_store.history().observe_states_with([layout, this]() -> std::optional<std::string> {
        try {
            VenvState state = observe_state(layout, m_store.db());
            hold_state(layout, m_store, state);
            return state.id;
        } catch (const std::exception&) { // an unreadable dist-info, a damaged index: no state kept
            return std::nullopt;
        }
    });
    recover_before_mutating(context, m_store);
    m_check = check_state(context.layout, m_store);
    say_held(context.out, hold_state(context.layout, m_store, m_check.now));
    keep_reserve(context.store_root);
}

} // namespace venvtx
