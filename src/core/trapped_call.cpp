// changes_of: which paths a trapped system call names, and how it would change them.
#include "venvtx/core/trapped_call.hpp"

#include "venvtx/core/error.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
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

class ProcessView {
public:
    explicit ProcessView(pid_t pid) : m_pid(pid) {
        std::string mem = "/proc/" + std::to_string(pid) + "/mem";
        m_mem = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_mem < 0) {
            throw system_error("open " + mem, errno);
        }
    }
    ~ProcessView() { ::close(m_mem); }
    ProcessView(const ProcessView&) = delete;
    ProcessView& operator=(const ProcessView&) = delete;

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

    // Where a descriptor points (AT_FDCWD: the working directory); empty when it is no path.
    stdfs::path where(int fd) const {
        std::string link = "/proc/" + std::to_string(m_pid) + (fd == AT_FDCWD ? "/cwd" : "/fd/" + std::to_string(fd));
        char buffer[PATH_MAX];
        ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
        if (n <= 0 || buffer[0] != '/') {
            return {};
        }
        return std::string(buffer, static_cast<size_t>(n));
    }

    // An absolute path the process named, as venvtx can resolve it in the process's own view:
    // below its /proc/<pid>/root (a chroot too), /proc/self its own. (A relative one is
    // resolved from its pinned directory: see pin.)
    stdfs::path in_view(const std::string& text) const {
        std::string proc = "/proc/" + std::to_string(m_pid);
        for (const std::string self : {"/proc/self", "/proc/thread-self"}) {
            if (text == self || text.compare(0, self.size() + 1, self + "/") == 0) {
                return proc + text.substr(self.size());
            }
        }
        return proc + "/root" + text;
    }

    // `text` as the call will take it, its starting directory opened once (see PinnedPath).
    PinnedPath pin(int dirfd, const std::string& text) const {
        PinnedPath path;
        path.text = text;
        if (!text.empty() && text.front() == '/') {
            for (const std::string self : {"/proc/self", "/proc/thread-self"}) {
                if (text == self || text.compare(0, self.size() + 1, self + "/") == 0) {
                    path.text = "/proc/" + std::to_string(m_pid) + text.substr(self.size());
                }
            }
            return path;
        }
        std::string where = "/proc/" + std::to_string(m_pid) + (dirfd == AT_FDCWD ? "/cwd" : "/fd/" + std::to_string(dirfd));
        auto base = std::make_shared<UniqueFd>(::open(where.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (base->valid()) {
            path.base = std::move(base);
        } else {
            path.error = errno == ENOENT ? EBADF : errno;
        }
        return path;
    }

    pid_t pid() const { return m_pid; }

private:
    pid_t m_pid;
    int m_mem = -1;
};

std::optional<stdfs::path> real_path(const stdfs::path& path) {
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (!resolved) {
        return std::nullopt;
    }
    stdfs::path result(resolved);
    std::free(resolved);
    return result;
}

// The path with its directory resolved; with `follow`, a final symlink resolved too.
std::optional<stdfs::path> resolve(const stdfs::path& path, bool follow) {
    std::string name = path.filename().string();
    if (name.empty() || name == "." || name == "..") {
        return real_path(path);
    }
    auto parent = real_path(path.parent_path());
    if (!parent) {
        return std::nullopt; // the call fails with ENOENT by itself
    }
    stdfs::path result = *parent / name;
    struct stat st {};
    if (follow && ::lstat(result.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        return real_path(result).value_or(result);
    }
    return result;
}

class Decoder {
public:
    explicit Decoder(const TrappedCall& call) : m_call(call), m_view(call.pid) {}

    DecodedCall decode() {
        const auto& a = m_call.args;
        switch (m_call.number) {
        case SYS_open: opened(AT_FDCWD, a[0], a[1], a[2], std::nullopt); break;
        case SYS_openat: opened(fd(a[0]), a[1], a[2], a[3], std::nullopt); break;
        case SYS_openat2: // struct open_how: flags, mode, resolve
            opened(fd(a[0]), a[1], m_view.word_at(a[2]), m_view.word_at(a[2] + 8), m_view.word_at(a[2] + 16));
            break;
        case SYS_creat: opened(AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1], std::nullopt); break;
        case SYS_truncate:
            emulated(emulate_truncate(named(AT_FDCWD, a[0], ChangeKind::write, true), static_cast<off_t>(a[1])));
            break;
        case SYS_unlink: emulated(emulate_unlinkat(named(AT_FDCWD, a[0], ChangeKind::replace, false), 0)); break;
        case SYS_rmdir:
            emulated(emulate_unlinkat(named(AT_FDCWD, a[0], ChangeKind::replace, false), AT_REMOVEDIR));
            break;
        case SYS_mkdir: named(AT_FDCWD, a[0], ChangeKind::replace, false); break;
        case SYS_mknod: named(AT_FDCWD, a[0], node_kind(a[1]), false); break;
        case SYS_unlinkat:
            emulated(emulate_unlinkat(named(fd(a[0]), a[1], ChangeKind::replace, false), static_cast<int>(a[2])));
            break;
        case SYS_mkdirat: named(fd(a[0]), a[1], ChangeKind::replace, false); break;
        case SYS_mknodat: named(fd(a[0]), a[1], node_kind(a[2]), false); break;
        case SYS_rename: {
            PinnedPath from = named(AT_FDCWD, a[0], ChangeKind::move_tree, false);
            emulated(emulate_renameat2(from, named(AT_FDCWD, a[1], ChangeKind::replace, false), 0));
            break;
        }
        case SYS_renameat:
        case SYS_renameat2: {
            unsigned flags = m_call.number == SYS_renameat2 ? static_cast<unsigned>(a[4]) : 0;
            PinnedPath from = named(fd(a[0]), a[1], ChangeKind::move_tree, false);
            PinnedPath to = named(fd(a[2]), a[3], (flags & RENAME_EXCHANGE) ? ChangeKind::move_tree : ChangeKind::replace,
                                  false);
            emulated(emulate_renameat2(from, to, flags));
            break;
        }
        case SYS_symlink: named(AT_FDCWD, a[1], ChangeKind::replace, false); break;
        case SYS_link:
            named(AT_FDCWD, a[0], ChangeKind::second_name, false);
            named(AT_FDCWD, a[1], ChangeKind::replace, false);
            break;
        case SYS_symlinkat: named(fd(a[1]), a[2], ChangeKind::replace, false); break;
        case SYS_linkat:
            named(fd(a[0]), a[1], ChangeKind::second_name, (a[4] & AT_SYMLINK_FOLLOW) != 0);
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
        case SYS_fchmodat2: at_or_fd(a[0], a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0); break;
        case SYS_fchownat: at_or_fd(a[0], a[1], (a[4] & AT_SYMLINK_NOFOLLOW) == 0); break;
        case SYS_utimensat: at_or_fd(a[0], a[1], (a[3] & AT_SYMLINK_NOFOLLOW) == 0); break;
        case SYS_futimesat: at_or_fd(a[0], a[1], true); break;
        case SYS_bind: bound(a[1], a[2]); break;
        case SYS_mount: named(AT_FDCWD, a[1], ChangeKind::mount, true); break;
        case SYS_umount2:
        case SYS_pivot_root:
        case SYS_chroot: named(AT_FDCWD, a[0], ChangeKind::mount, true); break;
        case SYS_move_mount: named(fd(a[2]), a[3], ChangeKind::mount, true); break;
        case SYS_fchmod:
        case SYS_fchown:
        case SYS_fsetxattr:
        case SYS_fremovexattr: described(fd(a[0])); break;
        default: break;
        }
        return {m_changes, m_emulation};
    }

private:
    static int fd(std::uint64_t arg) { return static_cast<int>(arg); }

    // mknod makes a regular file with S_IFREG (or no type); anything else is a special node.
    static ChangeKind node_kind(std::uint64_t mode) {
        mode_t type = static_cast<mode_t>(mode) & S_IFMT;
        return type == 0 || type == S_IFREG ? ChangeKind::replace : ChangeKind::special;
    }

    // openat2 takes its flags from memory too: it is made here even when it only reads.
    void opened(int dirfd, std::uint64_t address, std::uint64_t flags, std::uint64_t mode,
                std::optional<std::uint64_t> how_resolve) {
        bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) != 0;
        PinnedPath path;
        if (writes) {
            bool follow = (flags & O_NOFOLLOW) == 0 && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
            path = named(dirfd, address, ChangeKind::write, follow);
        } else {
            path = m_view.pin(dirfd, m_view.string_at(address));
        }
        if (caller().same) {
            m_emulation = emulate_open(std::move(path), flags, mode, how_resolve, caller().same_umask);
        }
    }

    // A call venvtx makes itself, where the caller's calls do what venvtx's would.
    void emulated(Emulation emulation) {
        if (caller().same) {
            m_emulation = std::move(emulation);
        }
    }

    const CallerMatch& caller() {
        if (!m_caller) {
            m_caller = match_caller(m_view.pid());
        }
        return *m_caller;
    }

    // bind() of a unix socket to a path makes a socket node there (abstract names make none).
    void bound(std::uint64_t address, std::uint64_t length) {
        if (address == 0 || length <= sizeof(sa_family_t)) {
            return;
        }
        std::uint64_t family_word = 0;
        try {
            family_word = m_view.word_at(address); // 8 bytes of a sockaddr_un (110): all its own
        } catch (const Error&) {
            return; // a short sockaddr at the end of a page: not a unix path
        }
        if ((family_word & 0xffff) != AF_UNIX) {
            return;
        }
        std::uint64_t path = address + sizeof(sa_family_t);
        if ((m_view.word_at(path) & 0xff) != 0) {
            named(AT_FDCWD, path, ChangeKind::replace, false);
        }
    }

    // The *at calls that act on the descriptor itself when given no path (NULL or "").
    void at_or_fd(std::uint64_t dirfd, std::uint64_t path, bool follow) {
        if (path == 0 || m_view.string_at(path).empty()) {
            described(fd(dirfd));
        } else {
            named(fd(dirfd), path, ChangeKind::replace, follow);
        }
    }

    // Never normalized lexically: `link/../x` is wherever the kernel will take it. Relative
    // paths are resolved from the directory pinned for the call, absolute ones in the
    // caller's root.
    PinnedPath named(int dirfd, std::uint64_t address, ChangeKind kind, bool follow) {
        std::string text = m_view.string_at(address);
        PinnedPath path = m_view.pin(dirfd, text);
        if (text.empty() || path.error) {
            return path;
        }
        stdfs::path seen = path.base ? stdfs::path(path.seen_from_here()) : m_view.in_view(text);
        if (auto resolved = resolve(seen, follow)) {
            m_changes.push_back({*resolved, kind});
        }
        return path;
    }

    void described(int fd) {
        stdfs::path path = m_view.where(fd);
        std::string text = path.string();
        const std::string deleted = " (deleted)";
        if (!path.empty() && (text.size() < deleted.size() || text.compare(text.size() - deleted.size(), deleted.size(), deleted) != 0)) {
            m_changes.push_back({path, ChangeKind::replace});
        }
    }

    const TrappedCall& m_call;
    ProcessView m_view;
    std::vector<PendingChange> m_changes;
    std::optional<Emulation> m_emulation;
    std::optional<CallerMatch> m_caller;
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

DecodedCall decode_call(const TrappedCall& call) {
    return Decoder(call).decode();
}

} // namespace venvtx
