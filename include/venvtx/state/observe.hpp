// The venv's state now, read through the index's dist_facts: a dist-info is read again only when
// the InodeKey of its directory, RECORD, METADATA or INSTALLER moved (or was taken within the
// last two seconds, where a second change in the same clock tick would not move it).
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/database.hpp"
#include "venvtx/venv/layout.hpp"

namespace venvtx {

// Saves the state, the RECORD texts it names and the cache in the index (unless read-only).
VenvState observe_state(const VenvLayout& layout, Database& db);

} // namespace venvtx
