// After a watched command (install, run): what changed in the live venv that its transaction
// did not journal — through a second path to the venv, a hard link written from outside, or
// another process. venvtx holds no pre-image of such a change and cannot undo it: it is named
// in the verdict and in JSON (`changed_outside`), never folded into "as it was before".
#pragma once

#include "venvtx/capture/live_scan.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <future>
#include <set>

namespace venvtx {

// The venv scanned again against `before`, on a thread from the making on (what transaction
// `tx` journaled is read from the index first, in the caller's thread), less that journal.
class OutsideCheck {
public:
    OutsideCheck(const Context& context, Store& store, const LiveScan& before, std::optional<std::int64_t> tx);
    std::vector<LiveChange> get();

private:
    const Context& m_context;
    std::set<std::string> m_journaled;
    std::future<LiveCheck> m_check;
};

// `before`: scan_live of the venv taken before the command ran (under the locks). `started`:
// the check begun once the change was in place, if it was.
Outcome with_outside_changes(const Context& context, Store& store, const LiveScan& before,
                             std::optional<OutsideCheck>& started, Outcome outcome);
// The changes themselves, checked now.
std::vector<LiveChange> changed_outside(const Context& context, Store& store, const LiveScan& before,
                                        std::optional<std::int64_t> tx);

} // namespace venvtx
