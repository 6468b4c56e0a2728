// history_rows: the shared SELECT, file counts and row decoding.
#include "history_rows.hpp"

namespace venvtx::history_rows {

const char* const k_select_transaction =
    "SELECT id, kind, state, started_at, finished_at, argv, baseline, probe, undoes, undone_by, "
    "message, restored, unrestored, preview, live_probe, pruned_from, files_modified, files_removed, files_added, "
    "files_bytes, state_before, state_after, user, host, venvtx_version, details FROM transactions";

// A transaction's file counts from its entries: a leaf is anything but a directory or nothing.
const char* const k_file_counts =
    "SELECT COALESCE(SUM(b AND a), 0), COALESCE(SUM(b AND NOT a), 0), COALESCE(SUM(a AND NOT b), 0), "
    "COALESCE(SUM(size), 0) FROM (SELECT before_type IN ('file', 'symlink', 'special') AS b, "
    "after_type IN ('file', 'symlink', 'special') AS a, "
    "MAX(COALESCE(before_size, 0), COALESCE(after_size, 0)) AS size FROM entries WHERE tx_id = ?) WHERE a OR b";

NodeState read_state(const Statement& row, int first) {
    NodeState state;
    state.type = node_type_from_name(row.text(first));
    state.mode = static_cast<mode_t>(row.integer(first + 1));
    state.size = static_cast<std::uint64_t>(row.integer(first + 2));
    state.mtime_ns = row.integer(first + 3);
    state.link_target = row.text(first + 4);
    state.object = row.text(first + 5);
    return state;
}

std::optional<nlohmann::json> optional_json(const Statement& row, int column) {
    auto text = row.optional_text(column);
    return text ? std::optional<nlohmann::json>(nlohmann::json::parse(*text)) : std::nullopt;
}

} // namespace venvtx::history_rows
