// The trees a switch trades: a shadow cloned from a live unit, and the old version cleared once
// it was switched out.
#pragma once

#include <filesystem>
#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace venvtx {

// A path relative to a unit's root ("" for the root itself) -> whether it is so.
using UnitPathTest = std::function<bool(const std::string&)>;

struct ClosedDir {
    std::filesystem::path path;
    mode_t mode;
};

// One of the two empty directories that try RENAME_EXCHANGE beside a phase's first shadow.
std::filesystem::path exchange_trial_path(const std::filesystem::path& first_shadow, const char* which);

// The inode number at `path` (not followed), 0 where nothing is.
std::int64_t inode_at(const std::filesystem::path& path);

// Clones the directory `from` at `to`: directories made open to their owner (those that were
// not are returned, to close once the shadow is built; each one made is added to `made`, to
// flush), files and other nodes linked, symlinks made again. A leaf `skip` names is left out
// (a journaled path the change writes anyway).
std::vector<ClosedDir> clone_tree(const std::filesystem::path& from, const std::filesystem::path& to,
                                  const UnitPathTest& skip, std::vector<std::filesystem::path>& made);

// Clones a leaf unit (a module, a script): a file linked, a symlink made again.
void clone_leaf(const std::filesystem::path& from, const std::filesystem::path& to);

// Clears an old version at `old_root`, switched out of `live_root`: a leaf goes when `ours`
// names it (a journaled path), when the live unit holds the same node at the same place (a file
// linked into the shadow, the same symlink), or under __pycache__ (a reader's bytecode);
// directories go once empty. Returns what stays: someone else's, written into the unit while it
// was being switched.
std::vector<std::string> clear_old_tree(const std::filesystem::path& old_root, const std::filesystem::path& live_root,
                                        const UnitPathTest& ours);

} // namespace venvtx
