// At a command's start: the venv's state against the last one recorded. A difference is a change
// made outside venvtx (plain pip or uv, an edit): it becomes an `outside` entry, before the
// command does anything else.
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/venv/layout.hpp"

#include <optional>

namespace venvtx {

struct StateCheck {
    VenvState now;
    std::optional<std::int64_t> outside;  // the entry recorded, when the state had changed
};

// Records nothing where the index is read-only; the first state a store sees is its baseline.
StateCheck check_state(const VenvLayout& layout, Store& store);

// The changes as an outside entry records them in `details`.
nlohmann::json outside_details(const VenvLayout& layout, const std::vector<DistChange>& changes);

} // namespace venvtx
