// MutationSession: the locks, then recover-first.
#include "venvtx/txn/mutation_session.hpp"

#include "venvtx/store/space_reserve.hpp"
#include "venvtx/txn/recover.hpp"

namespace venvtx {

MutationSession::MutationSession(const Context& context, std::optional<double> wait_s)
    : m_store(context.store_root, true), m_lock(context.store_root, context.layout.root, wait_s) {
    m_store.require_writable();
    recover_before_mutating(context, m_store);
    keep_reserve(context.store_root);
}

} // namespace venvtx
