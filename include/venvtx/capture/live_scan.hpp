// A cheap scan of the live venv (but the store and .lock), kept as a tree: each path's type,
// inode and ctime. A scan before a command and a check after it tell every change to the venv,
// whoever made it and through whichever name (a bind mount elsewhere, a hard link from
// outside): any write, chmod or link moves a file's ctime, and a replacement changes its
// inode. The check reads a directory again only when its ctime moved (an entry made, removed
// or renamed in it) or may have moved unseen; elsewhere it stats the names it already knows.
// Directories count only when they appear, go or change type; a leaf whose ctime moved only
// along with its link count is unchanged (a name added or removed elsewhere, by uv's cache
// shared with another venv). A scan may run beside a previewed command (LiveScanning): then a
// node stamped after the scan began may already hold the command's change, and is named.
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace venvtx {

struct LiveNode {
    NodeType type = NodeType::absent;  // absent: gone while the scan read its directory
    ino_t inode = 0;
    std::int64_t ctime_ns = 0;
    // What a ctime that moved is read against: a link count that changed alone (uv linking the
    // same cache entry into another venv) changes nothing in this one.
    nlink_t links = 0;
    mode_t mode = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
};

struct LiveDir;

struct LiveEntry {
    std::string name;
    LiveNode node;
    std::unique_ptr<LiveDir> dir;  // a directory's entries
};

struct LiveDir {
    std::vector<LiveEntry> entries;  // sorted by name
};

struct LiveScan {
    LiveEntry root;             // the venv's root directory, named ""
    std::int64_t started_ns = 0; // the filesystems' clock when the scan began
    // Read while the command ran: a node stamped at or after started_ns may hold its change.
    bool beside_command = false;
    std::size_t paths = 0;
};

LiveScan scan_live(const VenvLayout& layout, const std::filesystem::path& store_root);

// The clock the kernel stamps ctimes with.
std::int64_t fs_clock_now();

// scan_live, before the command or, given `quiet_since` (the clock read after venvtx's own last
// change to the venv), on a thread of its own beside the command that starts next, begun once
// the clock has ticked past it: nothing venvtx did is stamped as late as the scan's start. Beside
// only where the venv's filesystem stamps finer than 10 ms, as the root's ctime shows.
class LiveScanning {
public:
    LiveScanning(const VenvLayout& layout, const std::filesystem::path& store_root,
                 std::optional<std::int64_t> quiet_since);
    const LiveScan& get();  // waits for the scan; throws what it threw

private:
    std::shared_future<LiveScan> m_scan;
};

struct LiveChange {
    std::string path;
    const char* change;  // "added", "removed" or "modified"
};

struct LiveCheck {
    std::vector<LiveChange> changes;  // sorted by path
    std::size_t paths = 0;            // the paths looked at
    std::size_t reread = 0;           // the directories read again
};

// What changed in the live venv since `before` was scanned. Below a unit in `relinked` (one a
// transaction switched: its unchanged files were linked into a shadow and unlinked from the old
// version), a file's ctime moved with its link count and back, so only a ctime move is no change.
LiveCheck changes_since(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root,
                        const std::set<std::string>& relinked = {});

} // namespace venvtx
