// What removing a set of distributions takes away: every RECORD path, the dist-info, the
// bytecode of removed .py files (any interpreter, any optimization level) and directories
// left empty — never a path that escapes the venv, never a file a staying distribution owns.
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/requirement.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct PlannedPath {
    std::string path;   // venv-relative
    NodeState state;    // as observed when planning
    std::string owner;  // distribution name
    std::string record_hash;  // RECORD's "sha256=..." for a listed file of the listed size, else empty
};

struct SharedFile {
    std::string path;
    std::string kept_for;  // the staying distribution that also owns it
};

struct OutsidePath {
    std::string path;   // as RECORD writes it
    std::string owner;  // the distribution whose RECORD lists it
};

// A staying distribution whose Requires-Dist (for this interpreter, no extra) names a removed one.
struct BrokenRequirement {
    std::string dependent;    // "sglang 0.5.5"
    std::string requirement;  // the line as written, e.g. "flashinfer-python>=0.5 ; python_version >= '3.9'"
    std::string removed;      // the removed distribution's name
};

// A pattern no installed distribution matches, and the installed name closest to it.
struct UnmatchedPattern {
    std::string pattern;
    std::optional<std::string> near;
};

struct RemovalPlan {
    std::vector<const Distribution*> targets;
    std::vector<PlannedPath> files;  // regular files and symlinks
    std::vector<PlannedPath> dirs;   // directories left empty, deepest first
    std::vector<SharedFile> shared_kept;
    std::vector<std::string> missing;  // listed in a RECORD but not on disk (venv-relative, or
                                       // as written when its directory is gone too)
    std::uint64_t bytes = 0;
    std::vector<BrokenRequirement> broken_requirements;
    std::vector<UnmatchedPattern> unmatched;  // patterns skipped: they matched nothing (as pip skips)
    std::vector<OutsidePath> outside;    // RECORD paths outside the venv: not removed (as pip skips them)
};

struct TargetSelection {
    std::set<const Distribution*> targets;
    std::vector<UnmatchedPattern> unmatched;  // patterns that matched no distribution
};

// The distributions the patterns name. A pattern that matches none is skipped (as pip skips what
// is not installed: none matched at all is "already gone"), unless `strict`: then throws a usage
// Error of kind no_match. One that names a legacy install venvtx does not remove path by path
// throws a usage Error of kind legacy_install.
TargetSelection select_targets(const VenvLayout& layout, const std::vector<Distribution>& dists,
                               const std::vector<std::string>& patterns, bool strict);

// The marker environment of the venv's interpreter (pyvenv.cfg's version, this machine).
MarkerEnvironment marker_environment(const VenvLayout& layout);

// Staying distributions whose requirements (markers evaluated in `env`) name a removed one.
std::vector<BrokenRequirement> requirements_broken_by(const std::vector<Distribution>& dists,
                                                      const std::set<const Distribution*>& removed,
                                                      const MarkerEnvironment& env);

// The patterns select as select_targets() does. Throws a usage Error (nothing changed) for no
// match, a missing or malformed RECORD, or a path escaping the venv.
RemovalPlan plan_removal(const VenvLayout& layout, const std::vector<Distribution>& dists,
                         const std::vector<std::string>& patterns, const std::filesystem::path& store_root,
                         bool strict = true);

} // namespace venvtx
