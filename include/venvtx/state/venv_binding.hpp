// The store belongs to one venv. A store elsewhere (--store, VENVTX_STORE) records the venv's
// root and interpreter when it first serves it; used with another venv it is refused (exit 2,
// naming the venv it belongs to) before anything is read or changed. The default store,
// <venv>/.venvtx, belongs to the venv it lies in, and moves with it.
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/venv/layout.hpp"

namespace venvtx {

void bind_store(Store& store, const VenvLayout& layout);

} // namespace venvtx
