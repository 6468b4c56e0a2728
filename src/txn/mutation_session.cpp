// MutationSession: the locks, then recover-first, then the venv's state against the history.
#include "venvtx/txn/mutation_session.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/state/observe.hpp"
#include "venvtx/state/state_check.hpp"
#include "venvtx/state/venv_binding.hpp"
#include "venvtx/store/space_reserve.hpp"
#include "venvtx/txn/recover.hpp"

namespace venvtx {

MutationSession::MutationSession(const Context& context, std::optional<double> wait_s)
    : m_store(context.store_root, true), m_lock(context.store_root, context.layout.root, wait_s) {
    m_store.require_writable();
    bind_store(m_store, context.layout);
    VenvLayout layout = context.layout;
    Database& db = m_store.db();
    m_store.history().observe_states_with([layout, &db]() -> std::optional<std::string> {
        try {
            return observe_state(layout, db).id;
        } catch (const std::exception&) { // an unreadable dist-info, a damaged index: no state kept
            return std::nullopt;
        }
    });
    recover_before_mutating(context, m_store);
    m_check = check_state(context.layout, m_store);
    keep_reserve(context.store_root);
}

} // namespace venvtx
