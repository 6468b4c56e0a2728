// What identifies one version of a file's inode: device, inode number, size, mtime and ctime.
// Any write, truncate, chmod, link or rename moves ctime, and ctime cannot be set back, so facts
// read from a file stay true while its key is unchanged (the kernel's clock tick aside: a
// change within the same tick as the reading is the one thing it cannot see).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <sys/stat.h>

namespace venvtx {

struct InodeKey {
    std::int64_t dev = 0;
    std::int64_t ino = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;

    bool operator==(const InodeKey&) const = default;
};

InodeKey inode_key_of(const struct stat& st);

// Whether facts read under `key` may be kept: its mtime and ctime both lie more than two seconds
// back (a change within the same clock tick as the reading would not move the key).
bool settled(const InodeKey& key);

// The key of the regular file at `path` (reached without following symlinks); nullopt for
// anything else or nothing.
std::optional<InodeKey> inode_key(const std::filesystem::path& path);

} // namespace venvtx
