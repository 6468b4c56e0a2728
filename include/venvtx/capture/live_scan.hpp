// A cheap scan of the live venv (but the store and .lock): each path's type and, for leaves,
// inode and ctime. Two scans around a command tell every change to the venv, whoever made it
// and through whichever name (a bind mount elsewhere, a hard link from outside): any write,
// chmod or link moves a file's ctime, and a replacement changes its inode. Directories count
// only when they appear, go or change type (their ctime moves with every entry made in them);
// a leaf whose ctime moved only along with its link count is unchanged (a name added or
// removed elsewhere, by uv's cache shared with another venv).
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace venvtx {

struct LiveNode {
    NodeType type = NodeType::absent;
    ino_t inode = 0;
    std::int64_t ctime_ns = 0;
    // What a ctime that moved is read against: a link count that changed alone (uv linking the
    // same cache entry into another venv) changes nothing in this one.
    nlink_t links = 0;
    mode_t mode = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
};

// Venv-relative path and node, sorted by path.
using LiveScan = std::vector<std::pair<std::string, LiveNode>>;

LiveScan scan_live(const VenvLayout& layout, const std::filesystem::path& store_root);

struct LiveChange {
    std::string path;
    const char* change;  // "added", "removed" or "modified"
};

// What differs between two scans, sorted by path.
std::vector<LiveChange> live_changes(const LiveScan& before, const LiveScan& after);

} // namespace venvtx
