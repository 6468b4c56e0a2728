// `venvtx rollback --dry-run`: what a rollback would do, without doing it. The transactions it
// would undo, the packages before -> after, the paths it would restore, and whether drift
// would refuse it (then exit 6, as the rollback itself would).
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <vector>

namespace venvtx {

// `undo`: the transactions the rollback would undo, newest first (a redo: the rollback it undoes).
Outcome rollback_dry_run(const Context& context, Store& store, const std::vector<TransactionRecord>& undo,
                         bool force);

} // namespace venvtx
