// A rollback across changes made outside venvtx (plain pip or uv): the venv brought to a recorded
// state from the files every recorded state holds (state/state_holds.hpp), as one transaction —
// the distributions that differ removed (captured: redoable) and their recorded versions put
// back from the holds, each checked by its inode and its hash before it is used.
#pragma once

#include "venvtx/ops/rollback.hpp"
#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/txn/engine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct HeldReturn {
    VenvState target;
    std::vector<DistChange> changes;   // now -> target
    std::vector<std::int64_t> undoes;  // the entries it undoes, newest first (outside ones too)
    std::string label;                 // "entry 5 (outside)" ...
    // Files of the target the store holds no copy of (venv-relative), by distribution "name version".
    std::vector<std::string> missing;
    // Held files changed in place since they were held (an editor, `echo >>`): their bytes are not
    // the state's. Only hashed when the return is applied.
    std::vector<std::string> changed;
};

// The venv's state with `entry`'s changes undone: each distribution it changed back to its state
// before. Throws a usage Error (not_undoable) when a later change moved one of them since.
VenvState state_without(const VenvState& now, const TransactionRecord& entry, Store& store);

// What returning to `target` needs, and what the store lacks of it (missing), without changing
// anything.
HeldReturn plan_held_return(Store& store, const VenvState& now, VenvState target,
                            std::vector<std::int64_t> undoes, std::string label);

// The transaction: every needed hold checked and linked as an object (those that fail are named in
// `held.changed`: with `force` they are left out, otherwise it throws exit 6, nothing changed).
TransactionPlan held_return_transaction(const Context& context, Store& store, HeldReturn& held, bool force);

// The held return a rollback asks for, when it undoes a change made outside venvtx: the newest
// change being an outside entry, `rollback TX` of one, `--to N` across one (its target is N's
// state). nullopt when no outside entry is involved, or no state was recorded to go back to.
std::optional<HeldReturn> held_return_for(Store& store, const VenvState& now, const RollbackOptions& options);

// Throws a usage Error (kind `legacy_install`) where the return would take away a legacy
// install (an .egg-info), which venvtx does not read: before anything is said or changed.
void refuse_legacy_return(const Context& context, const HeldReturn& held);

// `rollback --dry-run` of a held return.
Outcome held_return_dry_run(const Context& context, const HeldReturn& held);

} // namespace venvtx
