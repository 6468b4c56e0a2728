// What every mutating command opens first: the store, both locks, and a venv with no
// interrupted transaction left (recovered first, or exit 5).
#pragma once

#include "venvtx/store/lock.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <optional>

namespace venvtx {

class MutationSession {
public:
    MutationSession(const Context& context, std::optional<double> wait_s);
    Store& store() { return m_store; }
    MutationLock& lock() { return m_lock; }

private:
    Store m_store;
    MutationLock m_lock;
};

} // namespace venvtx
