// DirEvents: inotify on a set of directories (each alone, not its subtree), waiting for the next
// change in any of them, and watching again a directory that was removed once it is back.
#pragma once

#include "venvtx/core/unique_fd.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <vector>

namespace venvtx {

class DirEvents {
public:
    explicit DirEvents(std::vector<std::filesystem::path> dirs);

    // Waits until something changes in a watched directory (true), or `timeout_ms` passes (-1:
    // no limit; while a directory is missing, it is looked for once a second) or a signal arrives
    // (false: the caller knows which). Events that arrive together are read as one change.
    bool wait(int timeout_ms);
    // Whether every directory is watched now (a missing one is not).
    bool all_watched() const { return m_watched.size() == m_dirs.size(); }

private:
    // Adds a watch for each directory not watched yet; returns whether one was added.
    bool arm();

    std::vector<std::filesystem::path> m_dirs;
    UniqueFd m_fd;
    std::map<int, std::size_t> m_watched;  // watch descriptor -> index in m_dirs
};

} // namespace venvtx
