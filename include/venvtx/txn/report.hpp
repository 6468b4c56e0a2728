// How plans and transactions read: short human text, or the contract's JSON.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/probe/probe.hpp"
#include "venvtx/store/history.hpp"
#include "venvtx/store/transaction_lines.hpp"
#include "venvtx/venv/removal_plan.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace venvtx {

void say_removal_plan(const Output& out, const RemovalPlan& plan);
void say_removal_impact(const Output& out, const VenvLayout& layout, const RemovalImpact& impact);
// `remove --dry-run --json`: the plan and its impact.
nlohmann::json removal_plan_json(const RemovalPlan& plan, const RemovalImpact& impact);

// The contract's transaction object (docs/design.md, "The contract").
nlohmann::json transaction_json(const TransactionRecord& record);

// One line for `log`: id, state, kind, when, packages.
std::string transaction_line(const TransactionLine& line);
// The multi-line account `show` prints.
std::string transaction_details(const TransactionRecord& record, const std::vector<Entry>& entries);


// "baseline probe passed in 1.23s (2 GPUs: 0=H200 ok ...)", or the verdict line of a failure.
void say_probe(const Output& out, const std::string& label, const ProbeReport& report);

} // namespace venvtx
