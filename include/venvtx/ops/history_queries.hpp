// The commands that read the venv's history of states: status, diff, freeze; and stamp, which
// adds a point to it.
#pragma once

#include "venvtx/state/history_point.hpp"
#include "venvtx/state/record_check.hpp"
#include "venvtx/state/state_diff.hpp"
#include "venvtx/txn/context.hpp"

#include <optional>
#include <string>

namespace venvtx {

// status: the venv now against the last recorded state (nothing is recorded: the next command
// records the difference as an outside entry).
struct StatusReport {
    std::optional<std::string> last_state;  // nullopt: no history yet
    std::optional<std::string> last_recorded_at;
    VenvState now;
    StateDiff diff;
    std::vector<FileFinding> files;  // --files: not as RECORD says; --untracked: in no RECORD
    // What the store holds of the state now (state/state_holds.hpp): a change made outside
    // venvtx can be rolled back only where the files it removed were held.
    std::int64_t held_dists = 0;
    std::int64_t unheld_files = 0;
    std::string holds_unavailable;  // why the store cannot hold files at all, or ""
    bool holds_copied = false;      // held as copies: the store is on another filesystem (`config hold copy`)
};
StatusReport venv_status(const Context& context, bool files, bool untracked);

struct PointDiff {
    HistoryPoint from;
    HistoryPoint to;
    StateDiff diff;
};
PointDiff diff_points(const Context& context, const std::string& from, const std::string& to, bool with_files,
                      bool with_libs);

// The state at a point (`now` reads the venv).
std::pair<HistoryPoint, VenvState> state_at(const Context& context, const std::string& point);

// A stamp: the state now, as an entry of its own. Returns it.
TransactionRecord stamp(const Context& context, const std::optional<std::string>& comment);

} // namespace venvtx
