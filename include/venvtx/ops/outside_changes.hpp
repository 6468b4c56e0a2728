// After a watched command (install, run): what changed in the live venv that its transaction
// did not journal — through a second path to the venv, a hard link written from outside, or
// another process. venvtx holds no pre-image of such a change and cannot undo it: it is named
// in the verdict and in JSON (`changed_outside`), never folded into "as it was before".
#pragma once

#include "venvtx/capture/live_scan.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

namespace venvtx {

// `before`: scan_live of the venv taken before the command ran (under the locks).
Outcome with_outside_changes(const Context& context, Store& store, const LiveScan& before, Outcome outcome);
// The changes themselves: the venv scanned again, less what transaction `tx` journaled.
std::vector<LiveChange> changed_outside(const Context& context, Store& store, const LiveScan& before,
                                        std::optional<std::int64_t> tx);

} // namespace venvtx
