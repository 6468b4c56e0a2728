// What the History files share: the columns a transaction is read with, and row decoding.
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/store/database.hpp"

#include <nlohmann/json.hpp>
#include <optional>

namespace venvtx::history_rows {

// Every column of a transaction, in the order History::read_transaction reads them.
extern const char* const k_select_transaction;
// A transaction's file counts from its entries (one parameter: its id).
extern const char* const k_file_counts;

// The six columns of one side of an entry (type, mode, size, mtime, link, object) from `first`.
NodeState read_state(const Statement& row, int first);
std::optional<nlohmann::json> optional_json(const Statement& row, int column);

} // namespace venvtx::history_rows
