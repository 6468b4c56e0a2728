// The private overlay view: preview areas, and entering the namespace.
#include "venvtx/preview/overlay_view.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/mount_table.hpp"
#include "venvtx/core/unique_fd.hpp"
#include "venvtx/preview/view_seal.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

const char* k_preview_dir = "preview";

[[noreturn]] void unavailable(const std::string& what, int err) {
    throw PreviewUnavailable(what + ": " + std::strerror(err));
}

void write_proc(const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        unavailable(std::string("open ") + path, errno);
    }
    ssize_t n = ::write(fd, text.data(), text.size());
    int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
        unavailable(std::string("write ") + path, err);
    }
}

std::string fd_path(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

// The work directory's own "work" subdirectory is left mode 000 by the kernel.
void open_up_workdir(const stdfs::path& work, bool confined) {
    stdfs::path inner = work / "work";
    if (confined) {
        struct stat st {};
        if (Confinement::instance().stat_node(inner, st) && S_ISDIR(st.st_mode)) {
            Fs::instance().chmod(inner, 0700);
        }
    } else {
        ::chmod(inner.c_str(), 0700); // a what-if's own mkdtemp directory, outside venv and store
    }
}

// A volatile mount leaves work/incompat/volatile/dirty in the work directory, and the kernel
// refuses to mount the same layers again while it is there (preview/renamed_dirs does, as root).
// Not through the fs seam: the kernel's own marker in this preview's work directory (which
// nothing in the view can reach), each directory opened without following a symlink.
void clear_volatile_mark(int work) {
    auto below = [](int dir, const char* name) {
        return UniqueFd(::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    };
    UniqueFd inner = below(work, "work");
    UniqueFd incompat = inner.valid() ? below(inner.get(), "incompat") : UniqueFd();
    UniqueFd marked = incompat.valid() ? below(incompat.get(), "volatile") : UniqueFd();
    if (marked.valid()) {
        ::unlinkat(marked.get(), "dirty", 0);
        ::unlinkat(incompat.get(), "volatile", AT_REMOVEDIR);
        ::unlinkat(inner.get(), "incompat", AT_REMOVEDIR);
    }
}

} // namespace

bool mount_view_overlay(int lower, int upper, int work, bool root) {
    clear_volatile_mark(work);
    std::string layers = "lowerdir=" + fd_path(lower) + ",upperdir=" + fd_path(upper) + ",workdir=" + fd_path(work) +
                         (root ? "" : ",userxattr");
    // No file is metadata only. A renamed directory is a redirect where the kernel allows it
    // (root: pip's stash of a package copies nothing; preview/renamed_dirs makes it whole before
    // the layer is read), else copied. Volatile where the kernel has it (5.10 on): the overlay
    // never syncs the upper layer (its unmount would syncfs the venv's filesystem: every
    // process's unwritten data there); what the apply takes from it, venvtx flushes in place.
    std::vector<std::string> tries = {",redirect_dir=off,metacopy=off,index=off", ""};
    if (root) { // userxattr (a user namespace) takes no redirects
        tries.insert(tries.begin(), ",redirect_dir=on,metacopy=off,index=off");
    }
    for (const auto& options : tries) {
        for (const char* syncing : {",volatile", ""}) {
            if (::mount("overlay", fd_path(lower).c_str(), "overlay", 0, (layers + options + syncing).c_str()) == 0) {
                return true;
            }
        }
    }
    return false;
}

PreviewArea::PreviewArea(const std::optional<std::filesystem::path>& store_root) {
    Fs& fs = Fs::instance();
    stdfs::path base;
    if (store_root) {
        base = *store_root;
    } else {
        std::string pattern = (stdfs::temp_directory_path() / "venvtx-whatif-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw system_error("mkdtemp " + pattern, errno);
        }
        m_temporary = base = pattern;
        Confinement::instance().add_root(m_temporary);
    }
    static int made = 0; // several previews may run side by side (a --keep-going search)
    m_dir = base / k_preview_dir / (std::to_string(::getpid()) + "-" + std::to_string(++made));
    fs.mkdirs(base / k_preview_dir);
    fs.remove_tree(m_dir); // a killed venvtx with this pid left it
    fs.mkdir(m_dir, 0700);
    m_upper = m_dir / "upper";
    m_work = m_dir / "work";
    m_lock = m_dir / "lock";
    fs.mkdir(m_upper, 0755);
    fs.mkdir(m_work, 0700);
    fs.copy_file("/dev/null", m_lock, 0600);
}

PreviewArea::~PreviewArea() {
    try {
        open_up_workdir(m_work, true);
        Fs::instance().remove_tree(m_temporary.empty() ? m_dir : m_temporary / k_preview_dir);
        if (m_temporary.empty()) {
            Fs::instance().rmdir(m_dir.parent_path()); // fails while another area is there
        }
        if (!m_temporary.empty()) {
            ::rmdir(m_temporary.c_str()); // the what-if's own mkdtemp directory, now empty
        }
    } catch (const std::exception&) {
        // Left for remove_stale_previews (`venvtx recover`, the next mutating command).
    }
}

void remove_stale_previews(const std::filesystem::path& store_root) {
    stdfs::path previews = store_root / k_preview_dir;
    struct stat st {};
    if (!Confinement::instance().stat_node(previews, st)) {
        return;
    }
    std::error_code ec;
    for (const auto& entry : stdfs::directory_iterator(previews, ec)) {
        open_up_workdir(entry.path() / "work", true);
        Fs::instance().remove_tree(entry.path());
    }
    Fs::instance().remove_tree(previews);
}

void enter_overlay_view(const PreviewArea& area, const std::filesystem::path& venv_root,
                        const std::filesystem::path& store_root) {
    if (is_within(venv_root, store_root)) {
        throw PreviewUnavailable("the store " + store_root.string() + " holds the venv, so it cannot be hidden from it");
    }
    if (auto covered = mounts_below(venv_root, store_root); !covered.empty()) {
        // The overlay would show the directory under it, not what is mounted there: the probe
        // would judge another venv than the live one. (The store's own mount the view hides.)
        throw PreviewUnavailable("a filesystem is mounted below the venv, at " + covered.front().string());
    }
    char cwd[PATH_MAX];
    bool have_cwd = ::getcwd(cwd, sizeof cwd) != nullptr;
    bool root = ::geteuid() == 0;
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    if (::unshare(root ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        unavailable(root ? "a private mount namespace" : "a user namespace", errno);
    }
    if (!root) { // the same ids inside: what the command writes is owned as before
        write_proc("/proc/self/setgroups", "deny");
        write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
        write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        unavailable("making mounts private", errno);
    }
    // Every layer, target and source is a descriptor opened beneath its checked root, and the
    // mounts name them as /proc/self/fd/N: the venv's owner may swap the store (or a directory
    // in it) for a symlink at any moment, and a path string would then lead root's mount, and
    // the command's writes, wherever it points.
    // They are opened in this namespace (an overlay refuses layers from another one's mounts),
    // beneath the roots opened again here.
    Fs::instance().hook("preview_mount");
    Confinement& confinement = Confinement::instance();
    confinement.reopen_roots();
    UniqueFd lower = confinement.open_dir(venv_root);
    UniqueFd upper = confinement.open_dir(area.upper());
    UniqueFd work = confinement.open_dir(area.work());
    ParentDir lock_dir = confinement.open_parent(area.lock());
    UniqueFd own_lock(::openat(lock_dir.dir.get(), lock_dir.leaf.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
    if (!own_lock.valid()) {
        unavailable("open " + area.lock().string(), errno);
    }
    if (!mount_view_overlay(lower.get(), upper.get(), work.get(), root)) {
        unavailable("an overlay over " + venv_root.string(), errno);
    }
    confinement.reopen_roots(); // the venv's root is the overlay now; the store below it is its view
    struct stat st {};
    ParentDir venv_lock = confinement.open_parent(venv_root / ".lock");
    UniqueFd lock(::openat(venv_lock.dir.get(), venv_lock.leaf.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
    if (lock.valid() && ::fstat(lock.get(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::mount(fd_path(own_lock.get()).c_str(), fd_path(lock.get()).c_str(), nullptr, MS_BIND, nullptr) != 0) {
        unavailable("hiding " + (venv_root / ".lock").string(), errno);
    }
    if (confinement.stat_node(store_root, st)) { // a what-if may run before any store exists
        UniqueFd store = confinement.open_dir(store_root);
        if (::mount("tmpfs", fd_path(store.get()).c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "size=4k,mode=0555") != 0) {
            unavailable("hiding the store", errno);
        }
    }
    if (have_cwd && ::chdir(cwd) != 0) { // re-entered: a cwd inside the venv now sees the overlay
        ::chdir("/");
    }
    Confinement::instance().reopen_roots(); // so does every path venvtx resolves from now on
    seal_view(); // last: the mounts above needed what it drops
}

} // namespace venvtx
