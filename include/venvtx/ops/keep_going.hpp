// `remove --keep-going`: when removing the whole set fails the probe, commit the largest subset
// that passes. The impact analysis makes the first guess (keep whoever provides a library that
// would be lost); each further probe only narrows it.
#pragma once

#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/ops/remove.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/engine.hpp"

#include <vector>

namespace venvtx {

struct PlannedRemoval {
    std::vector<Distribution> inventory;  // plan.targets point into it
    RemovalPlan plan;
    RemovalImpact impact;
};

TransactionPlan removal_transaction(const RemovalPlan& removal);
// The same removal inside a preview's private view (plain unlinks: nothing there is live).
nlohmann::json remove_in_view(const VenvLayout& layout, const RemovalPlan& plan);

Outcome remove_keep_going(const Context& context, const RemoveOptions& options, Store& store,
                          const PlannedRemoval& planned);

} // namespace venvtx
