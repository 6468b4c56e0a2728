// How a removal plan reads: short human text, or the contract's JSON (`remove --dry-run --json`).
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/venv/removal_plan.hpp"

#include <nlohmann/json.hpp>

namespace venvtx {

// A warning for each skipped pattern, with the installed name closest to it.
void say_unmatched(const Output& out, const std::vector<UnmatchedPattern>& unmatched);
void say_removal_plan(const Output& out, const RemovalPlan& plan);
void say_removal_impact(const Output& out, const VenvLayout& layout, const RemovalImpact& impact);
// `remove --dry-run --json`: the plan and its impact.
nlohmann::json removal_plan_json(const RemovalPlan& plan, const RemovalImpact& impact);

} // namespace venvtx
