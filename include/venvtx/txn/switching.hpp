// Switching each unit a change touches into place at once (venv/switch_units.hpp): the unit's
// new version is built in a shadow beside it (its unchanged files linked in), then one
// renameat2(RENAME_EXCHANGE), or one rename where a side is absent, puts it in place. A reader
// sees the old version or the new one, never half of each. The switches table journals every
// step, so `recover` can undo a switch a kill interrupted (settle_switches).
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/txn/materialize.hpp"

#include <functional>
#include <string>
#include <vector>

namespace venvtx {

// Phases of one transaction that switch: its apply, and its restore.
constexpr int k_apply_phase = 1;
constexpr int k_restore_phase = 2;

struct SwitchedResult {
    MaterializeResult placed;
    std::size_t units = 0;    // switched at once
    std::string per_path;     // why it went path by path instead ("" when it did not)
    std::vector<std::string> left;  // old versions kept: they hold what someone else wrote meanwhile
};

// Brings `entries` to their `side` state, unit by unit. `after_switch` runs once every unit is
// switched and before the old versions are cleared: an apply captures its pre-images there
// (`relocation` says where each path's old version lies). On an apply, a unit whose new version
// could not be built stops everything before the first switch (`placed.unrestored` names it).
// Where the filesystem refuses RENAME_EXCHANGE, goes path by path (materialize) and says why.
SwitchedResult switch_into_place(const VenvLayout& layout, Store& store, std::int64_t tx, int phase,
                                 std::vector<Entry>& entries, Side side, const MaterializeSources& sources,
                                 const std::function<void(const Relocation&)>& after_switch);

// What a killed phase of `tx` left: a switch is undone (the old version back in place, found by
// the inodes journaled before it), an unswitched shadow removed, and the old versions of a
// phase that finished its switching cleared. Afterwards every journaled path is where a restore
// path by path finds it.
void settle_switches(const VenvLayout& layout, Store& store, std::int64_t tx);

} // namespace venvtx
