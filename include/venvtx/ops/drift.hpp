// Drift: whether the venv still holds what the transactions a rollback undoes left behind. A
// user's edit, an outside pip or uv, a symlink put in a package's place: any of them makes a
// rollback refuse (exit 6) before it touches anything, unless --force.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/venv/layout.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace venvtx {

struct DriftedPath {
    std::string path;  // venv-relative
    std::string found; // "file (12 bytes, content changed)", "symlink -> /x", "absent", ...
};

// Compares every path the `undone` transactions (newest first) journaled with the state the
// venv should hold now: the newest one's after-state, and between two of them, the older one's
// after-state against the newer one's before-state. Content is compared by hash where the
// index knows it, otherwise by size and mtime.
std::vector<DriftedPath> find_drift(const VenvLayout& layout, History& history,
                                    const std::vector<TransactionRecord>& undone);

// One line for the refusal: the count, the first paths, and where a dist-info changed, the
// distribution ("alpha-3.0.dist-info/RECORD" -> "alpha").
std::string describe_drift(const std::vector<DriftedPath>& drifted);

// The refusal's details for --json: {"paths": [{path, found}], "distributions": [...]}.
nlohmann::json drift_json(const std::vector<DriftedPath>& drifted);

} // namespace venvtx
