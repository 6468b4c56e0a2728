// What removing a set of distributions takes away: every RECORD path, the dist-info, the
// bytecode of removed .py files (any interpreter, any optimization level) and directories
// left empty — never a path that escapes the venv, never a file a staying distribution owns.
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct PlannedPath {
    std::string path;   // venv-relative
    NodeState state;    // as observed when planning
    std::string owner;  // distribution name
};

struct SharedFile {
    std::string path;
    std::string kept_for;  // the staying distribution that also owns it
};

struct RemovalPlan {
    std::vector<const Distribution*> targets;
    std::vector<PlannedPath> files;  // regular files and symlinks
    std::vector<PlannedPath> dirs;   // directories left empty, deepest first
    std::vector<SharedFile> shared_kept;
    std::vector<std::string> missing;  // listed in a RECORD but not on disk (venv-relative, or
                                       // as written when its directory is gone too)
    std::uint64_t bytes = 0;
};

// The distributions the patterns name; throws a usage Error for a pattern that matches none.
std::set<const Distribution*> select_targets(const std::vector<Distribution>& dists,
                                             const std::vector<std::string>& patterns);

// Every pattern must match at least one distribution. Throws a usage Error (nothing changed)
// for an unmatched pattern, a missing or malformed RECORD, or a path escaping the venv.
RemovalPlan plan_removal(const VenvLayout& layout, const std::vector<Distribution>& dists,
                         const std::vector<std::string>& patterns,
                         const std::filesystem::path& store_root);

} // namespace venvtx
