// A point in the venv's history, as `diff` and `freeze --at` take it: `7` (the state after entry
// 7), `7^` (before it), `0` (before the first entry), `@TIME` (the state recorded last at or
// before TIME, UTC: `@2026-11-30T14:00`, `@2026-11-30`, or back from now: `@-2h`, `@-30m`,
// `@-1d`), or `now`.
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/store.hpp"

#include <optional>
#include <string>

namespace venvtx {

struct HistoryPoint {
    std::string text;                  // as typed
    std::string state;                 // its state id
    std::optional<std::int64_t> entry; // the entry it belongs to, if any
};

// Throws a usage Error (one line, naming the point) for a point that does not parse or that the
// history does not reach.
HistoryPoint resolve_point(const std::string& text, Store& store, const VenvState& now);

// The state a point names, loaded (throws when the index lacks it).
VenvState point_state(Store& store, const HistoryPoint& point, const VenvState& now);

} // namespace venvtx
