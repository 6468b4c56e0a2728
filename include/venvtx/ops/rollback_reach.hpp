// Whether a rollback reaches what it aims at, decided before anything moves. A change made
// outside venvtx (plain pip or uv) is one venvtx holds no copy of: undoing venvtx's own
// transactions around it does not put the venv back. Each refusal names the outside entry and
// the command that would repair it (exit 2, nothing changed).
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// Names the changes made outside venvtx after entry `since`: "" when there are none, else
// " (entry 3 changed the venv outside venvtx (flash-attn 2.8.3 → ∅))".
std::string outside_since(Store& store, std::int64_t since);

// `venvtx rollback` undoes the newest change: refused (kind `outside_change`) when that is an
// outside entry newer than `target`, the newest transaction it could undo. With `force` the
// rollback undoes `target` all the same.
void refuse_newest_outside(Store& store, const std::optional<TransactionRecord>& target, bool force);

// `venvtx rollback TX` where TX is an outside entry (kind `outside_change`).
[[noreturn]] void refuse_outside_entry(const TransactionRecord& entry);

// `venvtx rollback --to N`: the distributions the venv would hold once `undo` (newest first) is
// undone, against N's. Refused (kind `not_reachable`) when they differ, unless `force`.
// Returns the difference ("" when N is reached), which a forced rollback reports.
std::string refuse_unreachable(Store& store, const VenvState& now, std::int64_t to,
                               const std::vector<TransactionRecord>& undo, bool force);

} // namespace venvtx
