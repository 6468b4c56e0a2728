// How states and their differences read: `diff` lines (`torch: 2.11.0 → 2.12.0, +3.1 MB`),
// library gains and losses, per-file flags, `freeze` lines, and their JSON.
#pragma once

#include "venvtx/state/history_point.hpp"
#include "venvtx/state/state_diff.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace venvtx {

// One line per distribution that differs; "no distribution differs" when none does.
std::vector<std::string> dist_diff_lines(const StateDiff& diff);
// The libraries one side provides and the other does not: "lost: libnccl.so.2 (nvidia-nccl-cu13 2.28.9)";
// where none differs, how many, and with `named` each of them.
std::vector<std::string> library_diff_lines(const StateDiff& diff, bool named);
// "+ path (dist)" per RECORD-listed path that differs.
std::vector<std::string> file_flag_lines(const StateDiff& diff);
// [{"name", "before", "after", "size_delta"}] per distribution that differs.
nlohmann::json dist_changes_json(const StateDiff& diff);
nlohmann::json state_diff_json(const HistoryPoint& from, const HistoryPoint& to, const StateDiff& diff,
                               bool with_files, bool with_libs);

// `name==version` for every distribution, as `pip freeze --all` prints them.
std::vector<std::string> freeze_lines(const VenvState& state);

} // namespace venvtx
