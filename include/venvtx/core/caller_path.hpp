// Where a path a stopped process names leads, resolved as that process's own call would resolve
// it: from its root, its working directory or one of its descriptors, with `/proc/self`,
// `/dev/fd/N` and `/dev/stdout` meaning its own, not venvtx's. Only to know what to capture:
// the kernel makes the call itself.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>

namespace venvtx {

struct CallerPath {
    int dirfd = -100;          // AT_FDCWD, or one of the process's descriptors
    std::string text;          // as the process passed it; empty: no path (AT_EMPTY_PATH)
    bool follow = false;       // whether a final symlink is followed
    bool in_root = false;      // openat2's RESOLVE_IN_ROOT: `dirfd` is the root of the walk
};

// The absolute path, as venvtx sees it, the call would act on; nothing when it names no
// file a venv could hold (a pipe, a deleted file, a missing directory, a loop of links).
std::optional<std::filesystem::path> resolve_for(pid_t pid, const CallerPath& path);

// Where one of the process's descriptors (or its working directory, AT_FDCWD) points;
// nothing when it is no path.
std::optional<std::filesystem::path> descriptor_path(pid_t pid, int fd);

} // namespace venvtx
