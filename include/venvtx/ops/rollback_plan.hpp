// What a rollback does, as a transaction plan: every path the undone transactions touched goes
// from what it is now to what it was before the oldest of them touched it.
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/txn/engine.hpp"

#include <vector>

namespace venvtx {

// Undoes one transaction. Its removal's unhashed captures are renamed back and its loose objects
// moved into place where that is safe (one filesystem, no probe of the live venv that could
// change the only copy); otherwise they are hashed and stored first, and copied.
TransactionPlan inverse_of(const Context& context, Store& store, const TransactionRecord& undone, bool live_probe,
                           bool force);

// Undoes `undone` (newest first) as one transaction, copying every after-state from the store
// (their unhashed captures are hashed and stored first). `target`: the entry whose state it aims at.
TransactionPlan combined_inverse(const Context& context, Store& store, const std::vector<TransactionRecord>& undone,
                                 std::int64_t target, bool force);

} // namespace venvtx
