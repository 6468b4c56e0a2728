// A probed rollback is previewed: its after-state is written into a preview's upper layer from
// the store (which the view hides), what it removes is removed inside the view, and the probe
// runs there beside the baseline. Only a pass reaches the live venv, applied from the store
// as any rollback is (pending captures and movable objects renamed, each unit switched at once).
#pragma once

#include "venvtx/preview/overlay_view.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/txn/engine.hpp"

#include <nlohmann/json.hpp>

namespace venvtx {

// Before the view is entered: every path the plan brings to a file, symlink, fifo or directory,
// written into `area`'s upper layer (files copied: the store keeps its own).
void fill_upper_layer(const Context& context, Store& store, const TransactionPlan& plan, const PreviewArea& area);

// Inside the view: the paths the plan empties, removed (deepest first).
nlohmann::json remove_in_view(const Context& context, const TransactionPlan& plan);

} // namespace venvtx
