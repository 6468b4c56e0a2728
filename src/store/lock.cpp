// FileLock: flock with a bounded wait.
#include "venvtx/store/lock.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/progress.hpp"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <optional>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace venvtx {

FileLock::FileLock(const std::filesystem::path& path, std::optional<double> wait_s, const char* what)
    : m_path(path) {
    // Reached like every path venvtx writes: a lock file that is a symlink is refused, not followed.
    ParentDir parent = Confinement::instance().open_parent(path);
    m_fd = ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (m_fd < 0 && (errno == EACCES || errno == EROFS)) {
        // Another user's store, or a read-only one: flock needs no write access to an existing file.
        m_fd = ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    struct stat dir {};
    struct stat file {};
    if (m_fd >= 0 && ::geteuid() == 0 && ::fstat(parent.dir.get(), &dir) == 0 && ::fstat(m_fd, &file) == 0 &&
        (file.st_uid != dir.st_uid || file.st_gid != dir.st_gid)) {
        // Root locking another user's venv: <venv>/.lock stays theirs, or their uv could not open it.
        ::fchown(m_fd, dir.st_uid, dir.st_gid);
    }
    if (m_fd < 0 && errno == ELOOP) {
        throw usage_error(path.string() + " is a symbolic link: venvtx never follows one where it writes; "
                          "remove it (nothing was changed)");
    }
    if (m_fd < 0) {
        throw system_error("open lock " + path.string(), errno);
    }
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<long>((wait_s ? *wait_s : 0) * 1000));
    std::optional<Progress::Phase> waiting;  // begun once the lock is found held
    for (;;) {
        bool block = !wait_s && waiting; // waiting without a deadline, and the lock known held
        if (::flock(m_fd, LOCK_EX | (block ? 0 : LOCK_NB)) == 0) {
            return;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int err = errno;
            ::close(m_fd);
            throw system_error("lock " + path.string(), err);
        }
        if (!waiting) {
            waiting.emplace(std::string("waiting for the lock on ") + what);
        }
        if (!wait_s) {
            continue;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            ::close(m_fd);
            throw Error(ExitCode::locked, std::string(what) + " is locked by another process (" +
                                              path.string() + "); try again, or pass --wait SECONDS");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void FileLock::release() { ::flock(m_fd, LOCK_UN); }

void FileLock::reacquire() {
    while (::flock(m_fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            throw system_error("lock " + m_path.string(), errno);
        }
    }
}

FileLock::~FileLock() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

} // namespace venvtx
