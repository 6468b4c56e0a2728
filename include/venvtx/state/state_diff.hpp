// What differs between two states, from their distributions and the RECORD texts the index keeps:
// versions and sizes (`nix store diff-closures` style), per-file flags, and the shared libraries
// each side provides.
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/database.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct DistDiff {
    std::string name;
    std::optional<std::string> before;  // versions; nullopt: absent
    std::optional<std::string> after;
    std::int64_t size_delta = 0;        // bytes RECORD lists, after less before
};

// '+' added, '-' removed, 'c' content (hash or size) changed, per RECORD-listed path.
struct FileFlag {
    char flag = 'c';
    std::string path;  // as RECORD writes it
    std::string dist;
};

struct StateDiff {
    std::vector<DistDiff> dists;
    std::vector<FileFlag> files;                      // filled when asked for
    std::map<std::string, std::string> libs_before;   // library file name -> "dist version"
    std::map<std::string, std::string> libs_after;    // filled when asked for
};

StateDiff diff_states(Database& db, const VenvState& from, const VenvState& to, bool with_files, bool with_libs);

} // namespace venvtx
