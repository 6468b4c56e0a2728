// What every mutating command opens first: the store, both locks, a venv with no interrupted
// transaction left (recovered first, or exit 5), and any change made outside venvtx since the
// last command recorded (state/state_check.hpp).
#pragma once

#include "venvtx/state/state_check.hpp"
#include "venvtx/store/lock.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <optional>

namespace venvtx {

class MutationSession {
public:
    MutationSession(const Context& context, std::optional<double> wait_s);
    MutationSession(const MutationSession&) = delete; // the state observer refers to this store
    MutationSession& operator=(const MutationSession&) = delete;
    Store& store() { return m_store; }
    MutationLock& lock() { return m_lock; }
    // The venv's state when the session began, and the outside entry recorded then, if any.
    const StateCheck& state_check() const { return m_check; }

private:
    Store m_store;
    MutationLock m_lock;
    StateCheck m_check;
};

} // namespace venvtx
