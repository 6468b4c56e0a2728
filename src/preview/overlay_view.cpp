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

// Commas separate overlay options and colons separate lower layers: both are escaped in paths.
std::string escaped(const stdfs::path& path) {
    std::string text;
    for (char c : path.string()) {
        if (c == ',' || c == ':' || c == '\\') {
            text += '\\';
        }
        text += c;
    }
    return text;
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

} // namespace

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
    // Opened in this namespace, before the overlay: once the store is hidden, the area is out of reach by path.
    UniqueFd own_lock(::open(area.lock().c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW));
    if (!own_lock.valid()) {
        unavailable("open " + area.lock().string(), errno);
    }
    std::string layers = "lowerdir=" + escaped(venv_root) + ",upperdir=" + escaped(area.upper()) +
                         ",workdir=" + escaped(area.work()) + (root ? "" : ",userxattr");
    // Plain layers: a renamed directory is copied, not redirected, and no file is metadata only.
    if (::mount("overlay", venv_root.c_str(), "overlay", 0, (layers + ",redirect_dir=off,metacopy=off,index=off").c_str()) != 0 &&
        ::mount("overlay", venv_root.c_str(), "overlay", 0, layers.c_str()) != 0) {
        unavailable("an overlay over " + venv_root.string(), errno);
    }
    stdfs::path lock = venv_root / ".lock";
    std::string lock_source = "/proc/self/fd/" + std::to_string(own_lock.get());
    struct stat st {};
    if (::lstat(lock.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::mount(lock_source.c_str(), lock.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        unavailable("hiding " + lock.string(), errno);
    }
    if (::lstat(store_root.c_str(), &st) == 0 && // a what-if may run before any store exists
        ::mount("tmpfs", store_root.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=4k,mode=0555") != 0) {
        unavailable("hiding the store", errno);
    }
    if (have_cwd && ::chdir(cwd) != 0) { // re-entered: a cwd inside the venv now sees the overlay
        ::chdir("/");
    }
    Confinement::instance().reopen_roots(); // so does every path venvtx resolves from now on
    seal_view(); // last: the mounts above needed what it drops
}

} // namespace venvtx
