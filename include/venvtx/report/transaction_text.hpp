// report/ is how plans, probes and transactions read, as text and as the contract's JSON.
//
// How a transaction reads: the contract's JSON object, a `log` line, the account `show` prints.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/store/transaction_lines.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace venvtx {

// The contract's transaction object (docs/design.md, "The contract").
nlohmann::json transaction_json(const TransactionRecord& record);

// "torch 2.11.0 → 2.12.0", "nvidia-nccl-cu13 2.28.9 → ∅".
std::string package_change_text(const PackageChange& change);
// One line for `log`: id, state, kind, when, packages.
// The column names above log's lines.
std::string transaction_line_header();
std::string transaction_line(const TransactionLine& line);
// The multi-line account `show` prints.
std::string transaction_details(const TransactionRecord& record, const std::vector<Entry>& entries);

} // namespace venvtx
