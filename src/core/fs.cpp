// Fs: the one place venvtx mutates the filesystem, with crash and fault injection. Every call
// acts on a directory descriptor opened beneath the venv's or the store's root (Confinement).
#include "venvtx/core/fs.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

FsError::FsError(const std::string& message, int err)
    : Error(ExitCode::internal, "system", message, nlohmann::json{{"errno", err}}), m_errno(err) {}

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

// Bytes [offset, offset + length) of `in` to the same offsets of `out`: copy_file_range, or
// pread/pwrite where the kernel does not copy between these two files.
void copy_range(int in, int out, off_t offset, off_t length, const stdfs::path& to) {
    off_t in_at = offset;
    off_t out_at = offset;
    while (length > 0) {
        ssize_t n = ::copy_file_range(in, &in_at, out, &out_at, static_cast<size_t>(length), 0);
        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
            break;
        }
        if (n < 0) {
            fail("copy", to, errno);
        }
        if (n == 0) {
            return; // the source shrank while it was copied
        }
        length -= n;
    }
    char buffer[1 << 16];
    while (length > 0) {
        ssize_t n = ::pread(in, buffer, static_cast<size_t>(std::min<off_t>(length, sizeof buffer)), in_at);
        if (n < 0) {
            fail("read", to, errno);
        }
        if (n == 0) {
            return;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = ::pwrite(out, buffer + done, static_cast<size_t>(n - done), out_at + done);
            if (w < 0) {
                fail("write", to, errno);
            }
            done += w;
        }
        in_at += n;
        out_at += n;
        length -= n;
    }
}

// The data of `in` (`size` bytes) into `out`, holes kept as holes: a sparse file stays sparse.
void copy_bytes(int in, int out, off_t size, const stdfs::path& to) {
    for (off_t offset = 0; offset < size;) {
        off_t data = ::lseek(in, offset, SEEK_DATA);
        if (data < 0 && errno == ENXIO) {
            break; // a hole to the end
        }
        off_t hole = data < 0 ? size : ::lseek(in, data, SEEK_HOLE);
        data = data < 0 ? offset : data; // no SEEK_DATA here: all of it is data
        hole = hole < 0 || hole > size ? size : hole;
        copy_range(in, out, data, hole - data, to);
        offset = hole;
    }
    if (::ftruncate(out, size) != 0) {
        fail("truncate", to, errno);
    }
}

bool is_overlay_xattr(const char* name) {
    return std::strncmp(name, "trusted.overlay.", 16) == 0 || std::strncmp(name, "user.overlay.", 13) == 0;
}

// What a copy keeps of its source besides the bytes: extended attributes (those this process
// may set), the owner where it may give it (root), access and modification times. The owner
// first: a chown clears security.capability.
void copy_metadata(int in, int out, const struct stat& st) {
    if (::geteuid() == 0) {
        ::fchown(out, st.st_uid, st.st_gid);
    }
    std::vector<char> names(4096);
    ssize_t length = ::flistxattr(in, names.data(), names.size());
    if (length < 0 && errno == ERANGE) {
        length = ::flistxattr(in, nullptr, 0);
        names.resize(length > 0 ? static_cast<size_t>(length) : 0);
        length = length > 0 ? ::flistxattr(in, names.data(), names.size()) : length;
    }
    for (ssize_t at = 0; length > 0 && at < length;) {
        const char* name = names.data() + at;
        at += static_cast<ssize_t>(std::strlen(name)) + 1;
        if (is_overlay_xattr(name)) {
            continue; // overlayfs's own bookkeeping of a preview layer, meaningless elsewhere
        }
        std::vector<char> value(static_cast<size_t>(std::max<ssize_t>(::fgetxattr(in, name, nullptr, 0), 0)));
        ssize_t got = ::fgetxattr(in, name, value.data(), value.size());
        if (got >= 0) {
            ::fsetxattr(out, name, value.data(), static_cast<size_t>(got), 0); // refused ones stay unset
        }
    }
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    ::futimens(out, times);
}

// user.* xattrs need write permission, even for the owner: a file the command made read-only
// (`chmod a-w` in a user namespace's overlay) is opened to its owner for the moment.
bool remove_xattr_of_read_only(int fd, const char* name) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || ::fchmod(fd, (st.st_mode & 07777) | S_IWUSR) != 0) {
        errno = EACCES;
        return false;
    }
    int removed = ::fremovexattr(fd, name);
    int saved = errno;
    ::fchmod(fd, st.st_mode & 07777);
    errno = saved;
    return removed == 0 || errno == ENODATA;
}

ParentDir parent_of(const stdfs::path& path) { return Confinement::instance().open_parent(path); }

// Best effort, for a temporary a failed copy leaves: the failure is what the caller reports.
void discard(const stdfs::path& temporary) {
    try {
        ParentDir parent = parent_of(temporary);
        ::unlinkat(parent.dir.get(), parent.leaf.c_str(), 0);
    } catch (const std::exception&) {
        // unreachable now: recovery removes it (Fs::move_temporary)
    }
}

UniqueFd open_contained(const stdfs::path& path, int flags) {
    ParentDir parent = parent_of(path);
    return UniqueFd(::openat(parent.dir.get(), parent.leaf.c_str(), flags));
}

} // namespace

Fs& Fs::instance() {
    static Fs fs;
    return fs;
}

Failpoints::Failpoints(const char* kill_variable, const char* fault_variable, const char* tally_variable)
    : owner(::getpid()) {
    kill_at = env_number(kill_variable);
    if (const char* file = std::getenv(tally_variable)) {
        tally = file;
    }
    if (const char* fault = std::getenv(fault_variable)) {
        // N:ENOSPC[:persist] or N:EIO[:persist]
        std::string spec(fault);
        fault_at = std::strtoull(spec.c_str(), nullptr, 10);
        fault_errno = spec.find("EIO") != std::string::npos ? EIO : ENOSPC;
        fault_persist = spec.find(":persist") != std::string::npos;
    }
}

Failpoints::~Failpoints() {
    // A forked child exiting (a helper, a preview's namespace) is not the run whose steps count.
    if (tally.empty() || ::getpid() != owner) {
        return;
    }
    if (std::FILE* file = std::fopen(tally.c_str(), "w")) {
        std::fprintf(file, "%llu\n", static_cast<unsigned long long>(steps));
        std::fclose(file);
    }
}

int Failpoints::count() {
    ++steps;
    if (kill_at != 0 && steps == kill_at) {
        std::raise(SIGKILL);
    }
    return fault_at != 0 && (steps == fault_at || (fault_persist && steps > fault_at)) ? fault_errno : 0;
}

Fs::Fs() : m_change("VENVTX_FAILPOINT", "VENVTX_FAULT", "VENVTX_FAILPOINT_TALLY"),
           m_hold("VENVTX_HOLD_FAILPOINT", "VENVTX_HOLD_FAULT", "VENVTX_HOLD_FAILPOINT_TALLY") {
    if (const char* hook = std::getenv("VENVTX_HOOK")) {
        std::string spec(hook);
        std::size_t colon = spec.find(':');
        if (colon != std::string::npos) {
            m_hook_point = spec.substr(0, colon);
            m_hook_command = spec.substr(colon + 1);
        }
    }
}

void Fs::hook(const char* point) const {
    if (!m_hook_command.empty() && m_hook_point == point && std::system(m_hook_command.c_str()) != 0) {
        throw FsError(std::string("VENVTX_HOOK at ") + point + " failed", EIO);
    }
}

void Fs::step(const char* op, const stdfs::path& path) {
    if (int err = m_change.count()) {
        fail(op, path, err);
    }
}

bool Fs::hold_link(int from_dir, const char* from, int to_dir, const char* to) {
    if (int err = m_hold.count()) {
        errno = err;
        return false;
    }
    return ::linkat(from_dir, from, to_dir, to, 0) == 0;
}

bool Fs::hold_copy(int from_dir, const char* from, int to_dir, const char* to, bool bytes_too) {
    if (int err = m_hold.count()) {
        errno = err;
        return false;
    }
    UniqueFd in(::openat(from_dir, from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!in.valid() || ::fstat(in.get(), &st) != 0) {
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return false;
    }
    // Whole or not at all: the copy gets its name only once written (a `.part` cut short is swept).
    std::string part = std::string(to) + ".part";
    ::unlinkat(to_dir, part.c_str(), 0);
    UniqueFd out(::openat(to_dir, part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400));
    if (!out.valid()) {
        return false;
    }
    bool copied = ::ioctl(out.get(), FICLONE, in.get()) == 0;
    if (!copied && bytes_too) {
        try {
            copy_bytes(in.get(), out.get(), st.st_size, part);
            copied = true;
        } catch (const FsError& error) {
            errno = error.errno_value();
        }
    }
    if (copied && ::renameat2(to_dir, part.c_str(), to_dir, to, RENAME_NOREPLACE) == 0) {
        return true;
    }
    int err = errno;
    ::unlinkat(to_dir, part.c_str(), 0);
    errno = err;
    return false;
}

bool Fs::hold_unlink(int dir, const char* name) {
    if (int err = m_hold.count()) {
        errno = err;
        return false;
    }
    return ::unlinkat(dir, name, 0) == 0;
}

void Fs::rename(const stdfs::path& from, const stdfs::path& to) {
    step("rename", from);
    ParentDir source = parent_of(from);
    ParentDir target = parent_of(to);
    check(::renameat(source.dir.get(), source.leaf.c_str(), target.dir.get(), target.leaf.c_str()), "rename", from);
}

void Fs::exchange(const stdfs::path& a, const stdfs::path& b) {
    step("exchange", a);
    // VENVTX_NO_EXCHANGE=1 refuses it as a filesystem without RENAME_EXCHANGE does, so that tests
    // run the path-by-path fallback.
    static bool refused = std::getenv("VENVTX_NO_EXCHANGE") != nullptr;
    if (refused) {
        fail("exchange", a, EINVAL);
    }
    ParentDir first = parent_of(a);
    ParentDir second = parent_of(b);
    check(::renameat2(first.dir.get(), first.leaf.c_str(), second.dir.get(), second.leaf.c_str(), RENAME_EXCHANGE),
          "exchange", a);
}

void Fs::drop_overlay_xattrs(const stdfs::path& path) {
    UniqueFd fd = open_contained(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (!fd.valid()) {
        return; // a symlink (overlayfs marks none that it renames up) or gone
    }
    std::vector<char> names(4096);
    ssize_t length = ::flistxattr(fd.get(), names.data(), names.size());
    for (ssize_t at = 0; length > 0 && at < length;) {
        const char* name = names.data() + at;
        at += static_cast<ssize_t>(std::strlen(name)) + 1;
        if (is_overlay_xattr(name)) {
            step("removexattr", path);
            if (::fremovexattr(fd.get(), name) != 0 && errno != ENODATA &&
                !(errno == EACCES && remove_xattr_of_read_only(fd.get(), name))) {
                fail("removexattr", path, errno);
            }
        }
    }
}

stdfs::path Fs::move_temporary(const stdfs::path& to) {
    return to.parent_path() / (".venvtx-move-" + to.filename().string());
}

void Fs::move(const stdfs::path& from, const stdfs::path& to, mode_t mode) {
    try {
        rename(from, to);
    } catch (const FsError& error) {
        if (error.errno_value() != EXDEV) {
            throw;
        }
        ParentDir source = parent_of(from);
        struct stat st {};
        check(::fstatat(source.dir.get(), source.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW), "stat", from);
        // Made whole beside `to`, then renamed over it as a rename would: `to` is never half
        // written, and whatever stood there (a restore's target) is replaced, not refused.
        stdfs::path temporary = move_temporary(to);
        if (struct stat stale {}; Confinement::instance().stat_node(temporary, stale)) {
            unlink(temporary); // a copy a killed venvtx left
        }
        try {
            if (S_ISLNK(st.st_mode)) {
                std::string target(static_cast<size_t>(st.st_size), '\0');
                if (::readlinkat(source.dir.get(), source.leaf.c_str(), target.data(), target.size()) < 0) {
                    fail("readlink", from, errno);
                }
                symlink(target, temporary);
            } else {
                copy_file(from, temporary, mode);
            }
        } catch (const FsError&) {
            discard(temporary); // a full disk gets its room back
            throw;
        }
        rename(temporary, to);
        unlink(from);
    }
}

void Fs::unlink(const stdfs::path& path) {
    step("unlink", path);
    ParentDir parent = parent_of(path);
    check(::unlinkat(parent.dir.get(), parent.leaf.c_str(), 0), "unlink", path);
}

void Fs::rmdir(const stdfs::path& path) {
    step("rmdir", path);
    ParentDir parent = parent_of(path);
    check(::unlinkat(parent.dir.get(), parent.leaf.c_str(), AT_REMOVEDIR), "rmdir", path);
}

void Fs::mkdir(const stdfs::path& path, mode_t mode) {
    step("mkdir", path);
    ParentDir parent = parent_of(path);
    check(::mkdirat(parent.dir.get(), parent.leaf.c_str(), mode), "mkdir", path);
}

void Fs::clone_dir(const stdfs::path& from, const stdfs::path& to) {
    step("mkdir", to);
    UniqueFd in = open_contained(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (!in.valid()) {
        fail("open", from, errno);
    }
    struct stat st {};
    check(::fstat(in.get(), &st), "stat", from);
    bool root = ::geteuid() == 0;
    if (!root && st.st_uid != ::geteuid()) {
        fail("clone", from, EPERM); // another user's: only root can give it that owner
    }
    ParentDir target = parent_of(to);
    check(::mkdirat(target.dir.get(), target.leaf.c_str(), 0700), "mkdir", to);
    UniqueFd out(::openat(target.dir.get(), target.leaf.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!out.valid()) {
        fail("open", to, errno);
    }
    struct stat made {};
    check(::fstat(out.get(), &made), "stat", to);
    if (!root && made.st_gid != st.st_gid) {
        check(::fchown(out.get(), static_cast<uid_t>(-1), st.st_gid), "chown", to);
    }
    copy_metadata(in.get(), out.get(), st);
    check(::fchmod(out.get(), (st.st_mode & 07777) | S_IRWXU), "chmod", to); // after the owner
}

void Fs::mkdirs(const stdfs::path& path) {
    const Confinement& confinement = Confinement::instance();
    if (!confinement.contains(path)) {
        fail("mkdir", path, EPERM);
    }
    if (!confinement.contains(path.parent_path())) {
        // An outermost root (a store placed elsewhere): the user's own path, made as given.
        std::error_code ec;
        stdfs::create_directories(path, ec);
        if (ec) {
            fail("mkdir", path, ec.value());
        }
        return;
    }
    struct stat st {};
    if (confinement.stat_node(path, st)) {
        if (!S_ISDIR(st.st_mode)) {
            fail("mkdir", path, ENOTDIR);
        }
        return;
    }
    mkdirs(path.parent_path());
    step("mkdir", path);
    ParentDir parent = parent_of(path);
    if (::mkdirat(parent.dir.get(), parent.leaf.c_str(), 0755) != 0 && errno != EEXIST) {
        fail("mkdir", path, errno);
    }
}

void Fs::remove_tree(const stdfs::path& path) {
    struct stat st {};
    if (!Confinement::instance().stat_node(path, st)) {
        if (errno == ENOENT) {
            return;
        }
        fail("stat", path, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    if ((st.st_mode & S_IRWXU) != S_IRWXU && st.st_uid == ::geteuid()) {
        chmod(path, (st.st_mode & 07777) | S_IRWXU); // closed by a command (`chmod -R a-w` in a preview layer)
    }
    std::vector<std::string> names;
    {
        UniqueFd fd = Confinement::instance().open_dir(path);
        DIR* dir = ::fdopendir(fd.get());
        if (dir == nullptr) {
            fail("opendir", path, errno);
        }
        fd.release(); // the DIR owns it now
        while (const dirent* entry = ::readdir(dir)) {
            std::string name = entry->d_name;
            if (name != "." && name != "..") {
                names.push_back(name);
            }
        }
        ::closedir(dir);
    }
    for (const auto& name : names) {
        remove_tree(path / name);
    }
    rmdir(path);
}

void Fs::symlink(const std::string& target, const stdfs::path& link) {
    step("symlink", link);
    ParentDir parent = parent_of(link);
    check(::symlinkat(target.c_str(), parent.dir.get(), parent.leaf.c_str()), "symlink", link);
}

void Fs::mkfifo(const stdfs::path& path, mode_t mode) {
    step("mkfifo", path);
    ParentDir parent = parent_of(path);
    check(::mknodat(parent.dir.get(), parent.leaf.c_str(), S_IFIFO | (mode & 07777), 0), "mkfifo", path);
}

void Fs::link(const stdfs::path& existing, const stdfs::path& new_path) {
    step("link", new_path);
    ParentDir source = parent_of(existing);
    ParentDir target = parent_of(new_path);
    check(::linkat(source.dir.get(), source.leaf.c_str(), target.dir.get(), target.leaf.c_str(), 0), "link",
          existing);
}

void Fs::link_or_copy(const stdfs::path& existing, const stdfs::path& new_path, mode_t mode) {
    try {
        link(existing, new_path);
    } catch (const FsError& error) {
        if (error.errno_value() != EXDEV) {
            throw;
        }
        copy_whole(existing, new_path, mode); // the store is on another filesystem
    }
}

void Fs::take_parent_owner(const stdfs::path& path) {
    if (::geteuid() != 0) {
        return; // what anyone else makes is theirs, as it was
    }
    struct stat dir {};
    check(::fstat(parent_of(path).dir.get(), &dir), "stat", path.parent_path());
    give_owner(path, dir.st_uid, dir.st_gid);
}

void Fs::give_owner(const stdfs::path& path, uid_t uid, gid_t gid) {
    if (::geteuid() != 0) {
        return;
    }
    ParentDir parent = parent_of(path);
    struct stat node {};
    check(::fstatat(parent.dir.get(), parent.leaf.c_str(), &node, AT_SYMLINK_NOFOLLOW), "stat", path);
    if (node.st_uid != uid || node.st_gid != gid) {
        step("chown", path);
        check(::fchownat(parent.dir.get(), parent.leaf.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW), "chown", path);
    }
}

void Fs::chmod(const stdfs::path& path, mode_t mode) {
    step("chmod", path);
    ParentDir parent = parent_of(path);
    // AT_SYMLINK_NOFOLLOW: glibc acts on an O_PATH descriptor of the node itself, never a target.
    check(::fchmodat(parent.dir.get(), parent.leaf.c_str(), mode, AT_SYMLINK_NOFOLLOW), "chmod", path);
}

void Fs::set_mtime(const stdfs::path& path, std::int64_t mtime_ns) {
    step("utimens", path);
    struct timespec times[2];
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = mtime_ns / 1000000000;
    times[1].tv_nsec = mtime_ns % 1000000000;
    ParentDir parent = parent_of(path);
    check(::utimensat(parent.dir.get(), parent.leaf.c_str(), times, AT_SYMLINK_NOFOLLOW), "utimens", path);
}

void Fs::copy_file(const stdfs::path& from, const stdfs::path& to, mode_t mode) {
    step("copy", to);
    // Reading is confined like writing where the source is the venv's or the store's; a source
    // elsewhere (a venv file a command moved out) is only read, never followed at its last name.
    UniqueFd in = Confinement::instance().contains(from)
                      ? open_contained(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                      : UniqueFd(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!in.valid()) {
        fail("open", from, errno);
    }
    ParentDir target = parent_of(to);
    UniqueFd out(::openat(target.dir.get(), target.leaf.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777));
    if (!out.valid()) {
        fail("create", to, errno);
    }
    struct stat st {};
    check(::fstat(in.get(), &st), "stat", from);
    copy_bytes(in.get(), out.get(), st.st_size, to);
    copy_metadata(in.get(), out.get(), st);
    check(::fchmod(out.get(), mode & 07777), "chmod", to); // after fchown, which clears set-id bits
    check(::fsync(out.get()), "fsync", to);
}

void Fs::copy_whole(const stdfs::path& from, const stdfs::path& to, mode_t mode) {
    stdfs::path temporary = move_temporary(to);
    if (struct stat stale {}; Confinement::instance().stat_node(temporary, stale)) {
        unlink(temporary); // a copy a killed venvtx left
    }
    try {
        copy_file(from, temporary, mode);
    } catch (const FsError&) {
        discard(temporary); // a full disk gets its room back
        throw;
    }
    rename(temporary, to);
}

UniqueFd Fs::create_file(const stdfs::path& path, mode_t mode) {
    step("create", path);
    ParentDir target = parent_of(path);
    UniqueFd out(::openat(target.dir.get(), target.leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                          mode & 07777));
    if (!out.valid()) {
        fail("create", path, errno);
    }
    return out;
}

void Fs::write(int fd, const void* data, std::size_t size, const stdfs::path& path) {
    step("write", path);
    const char* bytes = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = ::write(fd, bytes, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail("write", path, errno);
        }
        bytes += n;
        size -= static_cast<std::size_t>(n);
    }
}

void Fs::fsync(int fd, const stdfs::path& path) {
    step("fsync", path);
    check(::fsync(fd), "fsync", path);
}

void Fs::fsync_dir(const stdfs::path& dir) {
    step("fsync", dir);
    UniqueFd fd = Confinement::instance().open_dir(dir);
    check(::fsync(fd.get()), "fsync", dir);
}

void Fs::sync_filesystem(const stdfs::path& path) {
    step("syncfs", path);
    UniqueFd fd = Confinement::instance().open_dir(path);
    check(::syncfs(fd.get()), "syncfs", path);
}

void Fs::flush(const std::vector<stdfs::path>& files, const std::set<stdfs::path>& dirs, const stdfs::path& root) {
    if (files.size() + dirs.size() > k_flush_each_limit) {
        sync_filesystem(root);
        return;
    }
    step("flush", root);
    auto opened = [](const stdfs::path& path, int flags, mode_t type) {
        UniqueFd fd;
        try {
            fd = open_contained(path, flags | O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        } catch (const FsError&) {
            return UniqueFd(); // its directory is gone
        }
        struct stat st {};
        if (fd.valid() && (::fstat(fd.get(), &st) != 0 || (st.st_mode & S_IFMT) != type)) {
            return UniqueFd();
        }
        return fd;
    };
    std::vector<std::pair<UniqueFd, const stdfs::path*>> writing;
    for (const auto& file : files) {
        if (UniqueFd fd = opened(file, 0, S_IFREG); fd.valid()) {
            ::sync_file_range(fd.get(), 0, 0, SYNC_FILE_RANGE_WRITE); // a hint: fdatasync decides
            writing.emplace_back(std::move(fd), &file);
        }
    }
    for (const auto& [fd, path] : writing) {
        check(::fdatasync(fd.get()), "fdatasync", *path);
    }
    for (const auto& dir : dirs) {
        if (UniqueFd fd = opened(dir, O_DIRECTORY, S_IFDIR); fd.valid()) {
            check(::fsync(fd.get()), "fsync", dir);
        }
    }
}

} // namespace venvtx
