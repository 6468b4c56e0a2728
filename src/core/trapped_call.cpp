// decode_call: which paths a trapped system call names, and how it would change them.
#include "venvtx/core/trapped_call.hpp"

#include "venvtx/core/caller_path.hpp"
#include "venvtx/core/error.hpp"

#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

constexpr std::uint64_t k_page = 4096;

// A stopped process's memory, read where its call's arguments point.
class ProcessMemory {
public:
    explicit ProcessMemory(pid_t pid) : m_pid(pid) {
        std::string mem = "/proc/" + std::to_string(pid) + "/mem";
        m_mem = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_mem < 0) {
            throw system_error("open " + mem, errno);
        }
    }
    ~ProcessMemory() { ::close(m_mem); }
    ProcessMemory(const ProcessMemory&) = delete;
    ProcessMemory& operator=(const ProcessMemory&) = delete;

    // A NUL-terminated string at `address`, read page by page (its end may border unmapped memory).
    std::string string_at(std::uint64_t address) const {
        std::string text;
        while (text.size() < PATH_MAX) {
            char chunk[k_page];
            std::uint64_t want = k_page - (address % k_page);
            ssize_t got = ::pread(m_mem, chunk, want, static_cast<off_t>(address));
            if (got <= 0) {
                throw system_error("read the memory of process " + std::to_string(m_pid), errno ? errno : EIO);
            }
            for (ssize_t i = 0; i < got; ++i) {
                if (chunk[i] == '\0') {
                    return text;
                }
                text.push_back(chunk[i]);
            }
            address += static_cast<std::uint64_t>(got);
        }
        throw Error(ExitCode::internal, "a path in process " + std::to_string(m_pid) + " is too long");
    }

    std::uint64_t word_at(std::uint64_t address) const {
        std::uint64_t value = 0;
        if (::pread(m_mem, &value, sizeof value, static_cast<off_t>(address)) != sizeof value) {
            throw system_error("read the memory of process " + std::to_string(m_pid), errno ? errno : EIO);
        }
        return value;
    }

    pid_t pid() const { return m_pid; }

private:
    pid_t m_pid;
    int m_mem = -1;
};

class CallDecoder {
public:
    explicit CallDecoder(const TrappedCall& call) : m_call(call), m_memory(call.pid) {}

    std::vector<PendingChange> decode() {
        const auto& a = m_call.args;
        switch (m_call.number) {
        case SYS_open: opened(AT_FDCWD, a[0], a[1], 0); break;
        case SYS_openat: opened(fd(a[0]), a[1], a[2], 0); break;
        case SYS_openat2: // struct open_how: flags, mode, resolve
            opened(fd(a[0]), a[1], m_memory.word_at(a[2]), m_memory.word_at(a[2] + 16));
            break;
        case SYS_creat: opened(AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, 0); break;
        case SYS_truncate: named(AT_FDCWD, a[0], ChangeKind::write, true); break;
        case SYS_unlink:
        case SYS_rmdir:
        case SYS_mkdir: named(AT_FDCWD, a[0], ChangeKind::replace, false); break;
        case SYS_mknod: named(AT_FDCWD, a[0], node_kind(a[1]), false); break;
        case SYS_unlinkat:
        case SYS_mkdirat: named(fd(a[0]), a[1], ChangeKind::replace, false); break;
        case SYS_mknodat: named(fd(a[0]), a[1], node_kind(a[2]), false); break;
        case SYS_rename: renamed(AT_FDCWD, a[0], AT_FDCWD, a[1], 0); break;
        case SYS_renameat: renamed(fd(a[0]), a[1], fd(a[2]), a[3], 0); break;
        case SYS_renameat2: renamed(fd(a[0]), a[1], fd(a[2]), a[3], static_cast<unsigned>(a[4])); break;
        case SYS_symlink: named(AT_FDCWD, a[1], ChangeKind::replace, false); break;
        case SYS_link:
            named(AT_FDCWD, a[0], ChangeKind::second_name, false);
            named(AT_FDCWD, a[1], ChangeKind::replace, false);
            break;
        case SYS_symlinkat: named(fd(a[1]), a[2], ChangeKind::replace, false); break;
        case SYS_linkat:
            if (a[4] & AT_EMPTY_PATH) {
                at_or_fd(a[0], a[1], false, ChangeKind::second_name); // a descriptor's file given a name
            } else {
                named(fd(a[0]), a[1], ChangeKind::second_name, (a[4] & AT_SYMLINK_FOLLOW) != 0);
            }
            named(fd(a[2]), a[3], ChangeKind::replace, false);
            break;
        case SYS_chmod:
        case SYS_chown:
        case SYS_utime:
        case SYS_utimes:
        case SYS_setxattr:
        case SYS_removexattr: named(AT_FDCWD, a[0], ChangeKind::replace, true); break;
        case SYS_lchown:
        case SYS_lsetxattr:
        case SYS_lremovexattr: named(AT_FDCWD, a[0], ChangeKind::replace, false); break;
        case SYS_fchmodat: named(fd(a[0]), a[1], ChangeKind::replace, true); break;
        case SYS_fchmodat2: at_or_fd(a[0], a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0, ChangeKind::replace); break;
        case SYS_fchownat: at_or_fd(a[0], a[1], (a[4] & AT_SYMLINK_NOFOLLOW) == 0, ChangeKind::replace); break;
        case SYS_utimensat: at_or_fd(a[0], a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0, ChangeKind::replace); break;
        case SYS_futimesat: at_or_fd(a[0], a[1], true, ChangeKind::replace); break;
        case SYS_bind: bound(a[1], a[2]); break;
        case SYS_mount: named(AT_FDCWD, a[1], ChangeKind::mount, true); break;
        case SYS_umount2:
        case SYS_pivot_root:
        case SYS_chroot: named(AT_FDCWD, a[0], ChangeKind::mount, true); break;
        case SYS_move_mount: named(fd(a[2]), a[3], ChangeKind::mount, true); break;
        case SYS_fchmod:
        case SYS_fchown:
        case SYS_fsetxattr:
        case SYS_fremovexattr: described(fd(a[0]), ChangeKind::replace); break;
        default: break;
        }
        return m_changes;
    }

private:
    static int fd(std::uint64_t arg) { return static_cast<int>(arg); }

    // mknod makes a regular file with S_IFREG (or no type); anything else is a special node.
    static ChangeKind node_kind(std::uint64_t mode) {
        mode_t type = static_cast<mode_t>(mode) & S_IFMT;
        return type == 0 || type == S_IFREG ? ChangeKind::replace : ChangeKind::special;
    }

    // openat2 takes its flags from memory: it is trapped even when it only reads.
    void opened(int dirfd, std::uint64_t address, std::uint64_t flags, std::uint64_t resolve) {
        bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) != 0;
        if (!writes || (flags & O_TMPFILE) == O_TMPFILE) {
            return; // an O_TMPFILE has no name until linkat gives it one
        }
        bool follow = (flags & O_NOFOLLOW) == 0 && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
        named(dirfd, address, ChangeKind::write, follow, (resolve & RESOLVE_IN_ROOT) != 0);
    }

    // Both sides of a rename, each saying where its inode goes (both ways for an exchange).
    void renamed(int from_dirfd, std::uint64_t from, int to_dirfd, std::uint64_t to, unsigned flags) {
        auto source = resolved(from_dirfd, from, false);
        auto target = resolved(to_dirfd, to, false);
        if (source) {
            m_changes.push_back({*source, ChangeKind::move_tree, target.value_or(stdfs::path())});
        }
        if (target) {
            bool exchange = (flags & RENAME_EXCHANGE) != 0;
            m_changes.push_back({*target, exchange ? ChangeKind::move_tree : ChangeKind::replace,
                                 exchange ? source.value_or(stdfs::path()) : stdfs::path()});
        }
    }

    // bind() of a unix socket to a path makes a socket node there (abstract names make none).
    void bound(std::uint64_t address, std::uint64_t length) {
        if (address == 0 || length <= sizeof(sa_family_t)) {
            return;
        }
        std::uint64_t family_word = 0;
        try {
            family_word = m_memory.word_at(address); // 8 bytes of a sockaddr_un (110): all its own
        } catch (const Error&) {
            return; // a short sockaddr at the end of a page: not a unix path
        }
        if ((family_word & 0xffff) != AF_UNIX) {
            return;
        }
        std::uint64_t path = address + sizeof(sa_family_t);
        if ((m_memory.word_at(path) & 0xff) != 0) {
            named(AT_FDCWD, path, ChangeKind::replace, false);
        }
    }

    // The *at calls that act on the descriptor itself when given no path (NULL or "").
    void at_or_fd(std::uint64_t dirfd, std::uint64_t path, bool follow, ChangeKind kind) {
        if (path == 0 || m_memory.string_at(path).empty()) {
            described(fd(dirfd), kind);
        } else {
            named(fd(dirfd), path, kind, follow);
        }
    }

    std::optional<stdfs::path> resolved(int dirfd, std::uint64_t address, bool follow, bool in_root = false) {
        return resolve_for(m_memory.pid(), {dirfd, m_memory.string_at(address), follow, in_root});
    }

    // Never normalized lexically: `link/../x` is wherever the kernel will take it.
    void named(int dirfd, std::uint64_t address, ChangeKind kind, bool follow, bool in_root = false) {
        if (auto path = resolved(dirfd, address, follow, in_root)) {
            m_changes.push_back({*path, kind, {}});
        }
    }

    void described(int fd, ChangeKind kind) {
        if (auto path = descriptor_path(m_memory.pid(), fd)) {
            m_changes.push_back({*path, kind, {}});
        }
    }

    const TrappedCall& m_call;
    ProcessMemory m_memory;
    std::vector<PendingChange> m_changes;
};

} // namespace

const std::vector<int>& trapped_syscalls() {
    static const std::vector<int> numbers = {
        SYS_openat2, SYS_creat, SYS_truncate, SYS_unlink, SYS_unlinkat, SYS_rmdir, SYS_mkdir,
        SYS_mkdirat, SYS_mknod, SYS_mknodat, SYS_rename, SYS_renameat, SYS_renameat2, SYS_symlink,
        SYS_symlinkat, SYS_link, SYS_linkat, SYS_chmod, SYS_fchmodat, SYS_fchmodat2, SYS_fchmod,
        SYS_chown, SYS_lchown, SYS_fchownat, SYS_fchown, SYS_utime, SYS_utimes, SYS_futimesat,
        SYS_utimensat, SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr,
        SYS_lremovexattr, SYS_fremovexattr, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot,
        SYS_move_mount, SYS_bind};
    return numbers;
}

std::vector<PendingChange> decode_call(const TrappedCall& call) {
    return CallDecoder(call).decode();
}

} // namespace venvtx
