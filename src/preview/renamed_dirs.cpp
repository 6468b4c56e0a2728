// settle_renamed_dirs: the redirects found, their directories copied up, marked opaque.
#include "venvtx/preview/renamed_dirs.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"
#include "venvtx/core/worker.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace venvtx {

namespace {

namespace stdfs = std::filesystem;

// Redirects exist only where root mounted the view (a user namespace's overlay takes none).
constexpr const char* k_redirect = "trusted.overlay.redirect";
constexpr const char* k_opaque = "trusted.overlay.opaque";

struct Listed {
    std::string name;
    struct stat st;
};

// The entries of the directory open at `fd`, each lstat'ed.
std::vector<Listed> entries_of(int fd, const std::string& what) {
    int again = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* handle = again < 0 ? nullptr : ::fdopendir(again);
    if (handle == nullptr) {
        int err = errno;
        if (again >= 0) {
            ::close(again);
        }
        throw system_error("read " + what, err);
    }
    std::vector<Listed> found;
    while (const dirent* entry = ::readdir(handle)) {
        std::string name = entry->d_name;
        if (name == "." || name == "..") {
            continue;
        }
        Listed one{name, {}};
        if (::fstatat(fd, name.c_str(), &one.st, AT_SYMLINK_NOFOLLOW) != 0) {
            int err = errno;
            ::closedir(handle);
            throw system_error("stat " + what + "/" + name, err);
        }
        found.push_back(std::move(one));
    }
    ::closedir(handle);
    return found;
}

UniqueFd child_dir(int fd, const std::string& name, const std::string& what) {
    UniqueFd child(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child.valid()) {
        throw system_error("open " + what, errno);
    }
    return child;
}

UniqueFd dir_below(int fd, const std::string& rel) {
    UniqueFd at(::dup(fd));
    for (const auto& part : stdfs::path(rel)) {
        at = child_dir(at.get(), part.string(), rel);
    }
    return at;
}

// The upper layer's directories that are redirects (venv-relative), none below another.
void find_redirects(int fd, const std::string& rel, std::vector<std::string>& found) {
    for (const auto& entry : entries_of(fd, "the preview layer")) {
        if (!S_ISDIR(entry.st.st_mode)) {
            continue;
        }
        std::string path = rel.empty() ? entry.name : rel + "/" + entry.name;
        UniqueFd child = child_dir(fd, entry.name, path);
        if (::fgetxattr(child.get(), k_redirect, nullptr, 0) >= 0) {
            found.push_back(path);
        } else {
            find_redirects(child.get(), path, found);
        }
    }
}

// Every node below the merged directory open at `fd` copied up by the overlay: a file by an
// open for writing (which writes nothing), anything else by a chown to no one (which changes
// nothing but its ctime).
void copy_up_below(int fd, const std::string& rel) {
    for (const auto& entry : entries_of(fd, rel)) {
        std::string path = rel + "/" + entry.name;
        if (S_ISREG(entry.st.st_mode)) {
            UniqueFd file(::openat(fd, entry.name.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
            if (!file.valid()) {
                throw system_error("copy up " + path, errno);
            }
        } else if (::fchownat(fd, entry.name.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(-1),
                              AT_SYMLINK_NOFOLLOW) != 0) {
            throw system_error("copy up " + path, errno);
        }
        if (S_ISDIR(entry.st.st_mode)) {
            copy_up_below(child_dir(fd, entry.name, path).get(), path);
        }
    }
}

// The upper directory open at `fd`, whole now, and each below it: opaque, with no redirect
// and no whiteout (nothing of the lower layer shows through them any more). Not through the
// fs seam: this is the preview's own layer, reached by descriptors opened beneath the checked
// store without following a symlink, and a crash leaves it to remove_stale_previews.
void make_opaque(int fd, const std::string& rel) {
    if (::fsetxattr(fd, k_opaque, "y", 1, 0) != 0 || (::fremovexattr(fd, k_redirect) != 0 && errno != ENODATA)) {
        throw system_error("mark " + rel + " whole in the preview layer", errno);
    }
    for (const auto& entry : entries_of(fd, rel)) {
        std::string path = rel + "/" + entry.name;
        if (S_ISCHR(entry.st.st_mode) && entry.st.st_rdev == makedev(0, 0)) {
            if (::unlinkat(fd, entry.name.c_str(), 0) != 0) {
                throw system_error("drop the whiteout " + path, errno);
            }
        } else if (S_ISDIR(entry.st.st_mode)) {
            make_opaque(child_dir(fd, entry.name, path).get(), path);
        }
    }
}

// In the worker: the view mounted again in a namespace of its own, the renamed directories
// copied up through it, then marked in the upper layer once the view is gone.
void settle_in_worker(const PreviewArea& area, const stdfs::path& venv_root, const std::vector<std::string>& renamed) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        throw system_error("a private mount namespace", errno);
    }
    Confinement& confinement = Confinement::instance();
    confinement.reopen_roots();
    UniqueFd lower = confinement.open_dir(venv_root);
    UniqueFd upper = confinement.open_dir(area.upper());
    UniqueFd work = confinement.open_dir(area.work());
    if (!mount_view_overlay(lower.get(), upper.get(), work.get(), true)) {
        throw system_error("mount the view again", errno);
    }
    confinement.reopen_roots();
    UniqueFd merged = confinement.open_dir(venv_root);
    for (const auto& rel : renamed) {
        copy_up_below(dir_below(merged.get(), rel).get(), rel);
    }
    merged = UniqueFd();
    if (::umount2(venv_root.c_str(), MNT_DETACH) != 0) {
        throw system_error("unmount the view", errno);
    }
    for (const auto& rel : renamed) {
        make_opaque(dir_below(upper.get(), rel).get(), rel);
    }
}

} // namespace

void settle_renamed_dirs(const PreviewArea& area, const stdfs::path& venv_root) {
    std::vector<std::string> renamed;
    find_redirects(Confinement::instance().open_dir(area.upper()).get(), "", renamed);
    if (renamed.empty()) {
        return;
    }
    Worker::await_exits(); // the view's overlay gone with its worker: the same layers are mounted again
    Worker worker([&] {
        settle_in_worker(area, venv_root, renamed);
        return std::string();
    });
    Worker::Result done = worker.wait();
    if (!done.ok) {
        throw Error(ExitCode::internal, "carrying the directory the command renamed (" + renamed.front() +
                                            ") out of its view: " + done.text + " (nothing changed)");
    }
}

} // namespace venvtx
