// One transaction, whatever its kind: baseline probe -> journal -> capture -> apply -> probe
// -> commit, or restore the exact before-state.
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct TransactionPlan {
    std::string kind;
    std::vector<PackageChange> packages;
    std::vector<Entry> entries;  // before: the path as it is now; after: what it must become
    std::optional<std::int64_t> undoes;
};

// Runs `plan` against the venv. The store must be open and locked by the caller. Returns exit
// code 0 (committed), 3 (probe failed, restored) or 4 (baseline failed, nothing changed);
// throws Error on an internal failure after restoring (or marking the transaction interrupted).
Outcome run_transaction(const Context& context, const MutationOptions& options, Store& store,
                        TransactionPlan plan);

} // namespace venvtx
