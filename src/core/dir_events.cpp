// DirEvents: one inotify descriptor, poll(2) on it.
#include "venvtx/core/dir_events.hpp"

#include "venvtx/core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace venvtx {

namespace {

// What changes a directory's entries (a dist-info made, removed, renamed) or the directory itself.
constexpr std::uint32_t k_mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                                 IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

} // namespace

DirEvents::DirEvents(std::vector<std::filesystem::path> dirs)
    : m_dirs(std::move(dirs)), m_fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (m_fd.get() < 0) {
        throw system_error("inotify_init1", errno);
    }
    arm();
}

bool DirEvents::arm() {
    bool added = false;
    for (std::size_t i = 0; i < m_dirs.size(); ++i) {
        bool watched = false;
        for (const auto& [wd, index] : m_watched) {
            watched = watched || index == i;
        }
        if (watched) {
            continue;
        }
        int wd = ::inotify_add_watch(m_fd.get(), m_dirs[i].c_str(), k_mask);
        if (wd >= 0) {
            m_watched[wd] = i;
            added = true;
        }
    }
    return added;
}

bool DirEvents::wait(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
        int remaining = timeout_ms;
        if (timeout_ms >= 0) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            remaining = static_cast<int>(std::max<std::int64_t>(0, left.count()));
        }
        if (!all_watched()) { // a directory to look for again: once a second
            remaining = remaining < 0 ? 1000 : std::min(remaining, 1000);
        }
        pollfd ready{m_fd.get(), POLLIN, 0};
        int polled = ::poll(&ready, 1, remaining);
        if (polled < 0) {
            if (errno == EINTR) {
                return false;
            }
            throw system_error("poll on inotify", errno);
        }
        bool changed = false;
        if (polled > 0) {
            alignas(inotify_event) char buffer[16384];
            ssize_t got;
            while ((got = ::read(m_fd.get(), buffer, sizeof buffer)) > 0) {
                for (char* at = buffer; at < buffer + got;) {
                    auto* event = reinterpret_cast<inotify_event*>(at);
                    if (event->mask & IN_MOVE_SELF) { // moved away: the path is what is watched
                        ::inotify_rm_watch(m_fd.get(), event->wd);
                        m_watched.erase(event->wd);
                    }
                    if (event->mask & IN_IGNORED) {
                        m_watched.erase(event->wd); // removed: looked for again
                    }
                    changed = true;
                    at += sizeof(inotify_event) + event->len;
                }
            }
        }
        changed = arm() || changed; // a directory back: whatever happened in it meanwhile counts
        if (changed) {
            return true;
        }
        if (timeout_ms >= 0 && std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
    }
}

} // namespace venvtx
