// The calls venvtx makes for a watched process, and when it may make them. They are the
// command's own calls, not venvtx's changes: they bypass the fs seam on purpose (the command may
// change whatever it could itself, inside the venv or not, and failpoints count venvtx's steps).
#include "venvtx/core/emulated_call.hpp"

#include <cerrno>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace venvtx {

namespace {

// What decides whether a process's calls do what venvtx's would: its ids, groups,
// capabilities, umask, mount namespace and root.
struct Identity {
    std::string credentials;  // the Uid, Gid, Groups and CapEff lines of /proc/<pid>/status
    std::string umask;
    dev_t ns_dev = 0;
    ino_t ns_ino = 0;
    dev_t root_dev = 0;
    ino_t root_ino = 0;
    bool known = false;
};

// /proc/<pid>/status in one read (it is about 1.5 KB): this runs for every call venvtx makes.
std::string status_of(const std::string& proc) {
    UniqueFd fd(::open((proc + "/status").c_str(), O_RDONLY | O_CLOEXEC));
    char buffer[4096];
    ssize_t got = fd.valid() ? ::read(fd.get(), buffer, sizeof buffer) : -1;
    return got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string();
}

Identity identity_of(const std::string& proc) {
    Identity identity;
    std::string status = status_of(proc);
    for (std::size_t at = 0; at < status.size();) {
        std::size_t end = status.find('\n', at);
        std::string_view line(status.data() + at, (end == std::string::npos ? status.size() : end) - at);
        at = end == std::string::npos ? status.size() : end + 1;
        if (line.starts_with("Uid:") || line.starts_with("Gid:") || line.starts_with("Groups:") ||
            line.starts_with("CapEff:")) {
            identity.credentials.append(line).push_back('\n');
        } else if (line.starts_with("Umask:")) {
            identity.umask = line;
        }
    }
    struct stat ns {};
    struct stat root {};
    if (identity.credentials.empty() || ::stat((proc + "/ns/mnt").c_str(), &ns) != 0 ||
        ::stat((proc + "/root").c_str(), &root) != 0) {
        return identity;
    }
    identity = {identity.credentials, identity.umask, ns.st_dev, ns.st_ino, root.st_dev, root.st_ino, true};
    return identity;
}

long result_of(long value) {
    return value < 0 ? -errno : value;
}

} // namespace

int PinnedPath::dirfd() const {
    return base ? base->get() : AT_FDCWD;
}

std::string PinnedPath::seen_from_here() const {
    return base ? "/proc/self/fd/" + std::to_string(base->get()) + "/" + text : text;
}

CallerMatch match_caller(pid_t pid) {
    static const Identity own = identity_of("/proc/self");
    Identity caller = identity_of("/proc/" + std::to_string(pid));
    CallerMatch match;
    match.same = own.known && caller.known && caller.credentials == own.credentials && caller.ns_dev == own.ns_dev &&
                 caller.ns_ino == own.ns_ino && caller.root_dev == own.root_dev && caller.root_ino == own.root_ino;
    match.same_umask = match.same && caller.umask == own.umask;
    return match;
}

Emulation emulate_unlinkat(PinnedPath path, int flags) {
    return {[path, flags] { // the command's own call, made for it: not through the fs seam (see the top)
        return path.error ? -path.error : result_of(::unlinkat(path.dirfd(), path.text.c_str(), flags));
    }};
}

Emulation emulate_renameat2(PinnedPath from, PinnedPath to, unsigned flags) {
    return {[from, to, flags] {
        if (from.error || to.error) {
            return static_cast<long>(-(from.error ? from.error : to.error));
        }
        return result_of(::syscall(SYS_renameat2, from.dirfd(), from.text.c_str(), to.dirfd(), to.text.c_str(), flags));
    }};
}

Emulation emulate_truncate(PinnedPath path, off_t length) {
    return {[path, length] { // the command's own call, made for it: not through the fs seam (see the top)
        return result_of(::truncate(path.seen_from_here().c_str(), length));
    }};
}

std::optional<Emulation> emulate_open(PinnedPath path, std::uint64_t flags, std::uint64_t mode,
                                      std::optional<std::uint64_t> how_resolve, bool same_umask) {
    if ((flags & O_TMPFILE) == O_TMPFILE) {
        return std::nullopt;
    }
    if (!path.error) {
        bool follow = (flags & O_NOFOLLOW) == 0 && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
        struct stat st {};
        if (::fstatat(path.dirfd(), path.text.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0) {
            if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
                return std::nullopt;
            }
        } else if (errno == ENOENT && (flags & O_CREAT) && !same_umask) {
            return std::nullopt;
        }
    }
    Emulation emulation;
    emulation.opens = true;
    emulation.close_on_exec = (flags & O_CLOEXEC) != 0;
    emulation.perform = [path, flags, mode, how_resolve] {
        if (path.error) {
            return static_cast<long>(-path.error);
        }
        if (!how_resolve) {
            return result_of(::openat(path.dirfd(), path.text.c_str(), static_cast<int>(flags | O_CLOEXEC),
                                      static_cast<mode_t>(mode)));
        }
        open_how how{};
        how.flags = flags | O_CLOEXEC;
        how.mode = mode;
        how.resolve = *how_resolve;
        return result_of(::syscall(SYS_openat2, path.dirfd(), path.text.c_str(), &how, sizeof how));
    };
    return emulation;
}

} // namespace venvtx
