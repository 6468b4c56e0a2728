// Fs: the one place venvtx mutates the filesystem, with crash and fault injection.
#include "venvtx/core/fs.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace venvtx {

namespace {

std::uint64_t env_number(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::strtoull(value, nullptr, 10) : 0;
}

[[noreturn]] void fail(const char* op, const stdfs::path& path, int err) {
    throw FsError(std::string(op) + " " + path.string() + ": " + std::strerror(err), err);
}

void check(int rc, const char* op, const stdfs::path& path) {
    if (rc != 0) {
        fail(op, path, errno);
    }
}

class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

// Fallback where copy_file_range is not supported between the two files.
void copy_by_read(int in, int out, const stdfs::path& to) {
    char buffer[1 << 16];
    for (;;) {
        ssize_t n = ::read(in, buffer, sizeof buffer);
        if (n < 0) {
            fail("read", to, errno);
        }
        if (n == 0) {
            return;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = ::write(out, buffer + done, static_cast<size_t>(n - done));
            if (w < 0) {
                fail("write", to, errno);
            }
            done += w;
        }
    }
}

} // namespace

Fs& Fs::instance() {
    static Fs fs;
    return fs;
}

Fs::Fs() {
    m_kill_at = env_number("VENVTX_FAILPOINT");
    if (const char* fault = std::getenv("VENVTX_FAULT")) {
        // N:ENOSPC[:persist] or N:EIO[:persist]
        std::string spec(fault);
        m_fault_at = std::strtoull(spec.c_str(), nullptr, 10);
        m_fault_errno = spec.find("EIO") != std::string::npos ? EIO : ENOSPC;
        m_fault_persist = spec.find(":persist") != std::string::npos;
    }
}

void Fs::step(const char* op, const stdfs::path& path) {
    ++m_steps;
    if (m_kill_at != 0 && m_steps == m_kill_at) {
        std::raise(SIGKILL);
    }
    if (m_fault_at != 0 && (m_steps == m_fault_at || (m_fault_persist && m_steps > m_fault_at))) {
        fail(op, path, m_fault_errno);
    }
}

void Fs::rename(const stdfs::path& from, const stdfs::path& to) {
    step("rename", from);
    check(::rename(from.c_str(), to.c_str()), "rename", from);
}

void Fs::move(const stdfs::path& from, const stdfs::path& to, mode_t mode) {
    try {
        rename(from, to);
    } catch (const FsError& error) {
        if (error.errno_value() != EXDEV) {
            throw;
        }
        struct stat st {};
        check(::lstat(from.c_str(), &st), "stat", from);
        if (S_ISLNK(st.st_mode)) {
            std::string target(static_cast<size_t>(st.st_size), '\0');
            if (::readlink(from.c_str(), target.data(), target.size()) < 0) {
                fail("readlink", from, errno);
            }
            symlink(target, to);
        } else {
            copy_file(from, to, mode);
        }
        unlink(from);
    }
}

void Fs::unlink(const stdfs::path& path) {
    step("unlink", path);
    check(::unlink(path.c_str()), "unlink", path);
}

void Fs::rmdir(const stdfs::path& path) {
    step("rmdir", path);
    check(::rmdir(path.c_str()), "rmdir", path);
}

void Fs::mkdir(const stdfs::path& path, mode_t mode) {
    step("mkdir", path);
    check(::mkdir(path.c_str(), mode), "mkdir", path);
}

void Fs::mkdirs(const stdfs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fail("mkdir", path, ENOTDIR);
        }
        return;
    }
    if (path.has_parent_path() && path.parent_path() != path) {
        mkdirs(path.parent_path());
    }
    step("mkdir", path);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        fail("mkdir", path, errno);
    }
}

void Fs::symlink(const std::string& target, const stdfs::path& link) {
    step("symlink", link);
    check(::symlink(target.c_str(), link.c_str()), "symlink", link);
}

void Fs::link(const stdfs::path& existing, const stdfs::path& new_path) {
    step("link", new_path);
    check(::link(existing.c_str(), new_path.c_str()), "link", existing);
}

void Fs::link_or_copy(const stdfs::path& existing, const stdfs::path& new_path, mode_t mode) {
    try {
        link(existing, new_path);
    } catch (const FsError& error) {
        if (error.errno_value() != EXDEV) {
            throw;
        }
        copy_file(existing, new_path, mode); // the store is on another filesystem
    }
}

void Fs::chmod(const stdfs::path& path, mode_t mode) {
    step("chmod", path);
    check(::chmod(path.c_str(), mode), "chmod", path);
}

void Fs::set_mtime(const stdfs::path& path, std::int64_t mtime_ns) {
    step("utimens", path);
    struct timespec times[2];
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = mtime_ns / 1000000000;
    times[1].tv_nsec = mtime_ns % 1000000000;
    check(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), "utimens", path);
}

void Fs::copy_file(const stdfs::path& from, const stdfs::path& to, mode_t mode) {
    step("copy", to);
    Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (in.get() < 0) {
        fail("open", from, errno);
    }
    Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777));
    if (out.get() < 0) {
        fail("create", to, errno);
    }
    struct stat st {};
    check(::fstat(in.get(), &st), "stat", from);
    off_t remaining = st.st_size;
    while (remaining > 0) {
        ssize_t n = ::copy_file_range(in.get(), nullptr, out.get(), nullptr,
                                      static_cast<size_t>(remaining), 0);
        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
            copy_by_read(in.get(), out.get(), to);
            break;
        }
        if (n < 0) {
            fail("copy", to, errno);
        }
        if (n == 0) {
            break;
        }
        remaining -= n;
    }
    check(::fchmod(out.get(), mode & 07777), "chmod", to);
    check(::fsync(out.get()), "fsync", to);
}

void Fs::fsync_dir(const stdfs::path& dir) {
    step("fsync", dir);
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) {
        fail("open", dir, errno);
    }
    check(::fsync(fd.get()), "fsync", dir);
}

void Fs::sync_filesystem(const stdfs::path& path) {
    step("syncfs", path);
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) {
        fail("open", path, errno);
    }
    check(::syncfs(fd.get()), "syncfs", path);
}

} // namespace venvtx
