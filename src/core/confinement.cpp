// Confinement: resolving paths beneath the venv's (or the store's) root without symlinks.
#include "venvtx/core/confinement.hpp"

#include "venvtx/core/fs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

[[noreturn]] void refuse(const stdfs::path& path, int err) {
    std::string why =
        err == ELOOP || err == EXDEV || err == ENOTDIR
            ? "a directory on its path is a symlink or not a directory (venvtx never follows "
              "symlinks in the venv or the store)"
            : std::strerror(err);
    throw FsError(path.string() + ": " + why, err);
}

[[noreturn]] void refuse_outside(const stdfs::path& path) {
    throw FsError(path.string() + ": outside the venv and the store: venvtx does not change it",
                  EPERM);
}

// One component at a time, refusing symlinks: for kernels without openat2 (before 5.6).
int walk_nofollow(int root, const std::string& rel, int flags) {
    if (rel.empty()) {
        return ::openat(root, ".", flags);
    }
    UniqueFd current;
    int at = root;
    stdfs::path parts(rel);
    for (auto it = parts.begin(); it != parts.end(); ++it) {
        bool last = std::next(it) == parts.end();
        int fd = ::openat(at, it->c_str(),
                          (last ? flags : O_PATH | O_DIRECTORY | O_CLOEXEC) | O_NOFOLLOW);
        if (fd < 0) {
            return -1;
        }
        current = UniqueFd(fd);
        at = fd;
    }
    return current.release();
}

int open_no_symlinks(int root, const std::string& rel, int flags) {
    static bool have_openat2 = true;
    if (have_openat2) {
        struct open_how how {};
        how.flags = static_cast<std::uint64_t>(flags | O_NOFOLLOW);
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        const char* name = rel.empty() ? "." : rel.c_str();
        for (int attempt = 0; attempt < 8; ++attempt) {
            long fd = ::syscall(SYS_openat2, root, name, &how, sizeof how);
            if (fd >= 0) {
                return static_cast<int>(fd);
            }
            if (errno == ENOSYS) {
                have_openat2 = false;
                break;
            }
            if (errno != EAGAIN) { // EAGAIN: a rename raced the lookup
                return -1;
            }
        }
        if (have_openat2) {
            return -1;
        }
    }
    return walk_nofollow(root, rel, flags);
}

} // namespace

Confinement& Confinement::instance() {
    static Confinement confinement;
    return confinement;
}

void Confinement::set_roots(std::vector<stdfs::path> roots) {
    for (auto& root : roots) {
        root = root.lexically_normal();
        if (!root.has_filename() && root != root.root_path()) {
            root = root.parent_path();
        }
    }
    // Outermost first: a store inside the venv is reached through the venv's root.
    std::sort(roots.begin(), roots.end(), [](const stdfs::path& a, const stdfs::path& b) {
        return a.native().size() < b.native().size();
    });
    m_roots = std::move(roots);
}

void Confinement::add_root(const stdfs::path& root) {
    std::vector<stdfs::path> roots = m_roots;
    roots.push_back(root);
    set_roots(std::move(roots));
}

bool Confinement::split(const stdfs::path& path, stdfs::path& root, std::string& rel) const {
    stdfs::path normal = path.lexically_normal();
    for (const auto& part : normal) {
        if (part == "..") {
            return false;
        }
    }
    std::string text = normal.string();
    while (text.size() > 1 && text.back() == '/') {
        text.pop_back();
    }
    for (const auto& candidate : m_roots) {
        const std::string& base = candidate.native();
        if (text == base) {
            root = candidate;
            rel.clear();
            return true;
        }
        std::string prefix = base == "/" ? base : base + "/";
        if (text.compare(0, prefix.size(), prefix) == 0) {
            root = candidate;
            rel = text.substr(prefix.size());
            return true;
        }
    }
    return false;
}

bool Confinement::contains(const stdfs::path& path) const {
    stdfs::path root;
    std::string rel;
    return split(path, root, rel);
}

UniqueFd Confinement::open_beneath(const stdfs::path& root, const std::string& rel) const {
    // The root itself is the user's own path (--venv, --store): reached as given.
    UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid()) {
        return UniqueFd();
    }
    return UniqueFd(open_no_symlinks(root_fd.get(), rel, O_PATH | O_DIRECTORY | O_CLOEXEC));
}

ParentDir Confinement::open_parent(const stdfs::path& path) const {
    stdfs::path root;
    std::string rel;
    if (!split(path, root, rel) || rel.empty()) {
        refuse_outside(path);
    }
    stdfs::path relative(rel);
    ParentDir parent;
    parent.leaf = relative.filename().string();
    parent.dir = open_beneath(root, relative.parent_path().string());
    if (!parent.dir.valid()) {
        refuse(path, errno);
    }
    return parent;
}

UniqueFd Confinement::open_dir(const stdfs::path& path) const {
    stdfs::path root;
    std::string rel;
    if (!split(path, root, rel)) {
        refuse_outside(path);
    }
    UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    UniqueFd dir(root_fd.valid()
                     ? open_no_symlinks(root_fd.get(), rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                     : -1);
    if (!dir.valid()) {
        refuse(path, errno);
    }
    return dir;
}

bool Confinement::stat_node(const stdfs::path& path, struct stat& st) const {
    stdfs::path root;
    std::string rel;
    if (!split(path, root, rel) || rel.empty()) {
        return ::lstat(path.c_str(), &st) == 0;
    }
    stdfs::path relative(rel);
    UniqueFd dir = open_beneath(root, relative.parent_path().string());
    if (!dir.valid()) {
        return false;
    }
    return ::fstatat(dir.get(), relative.filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::vector<std::string> Confinement::names_in(const std::filesystem::path& dir) const {
    std::vector<std::string> names;
    struct stat st {};
    if (!stat_node(dir, st) || !S_ISDIR(st.st_mode)) {
        return names;
    }
    UniqueFd fd = open_dir(dir);
    DIR* handle = ::fdopendir(fd.get());
    if (handle == nullptr) {
        return names;
    }
    fd.release(); // closedir closes it
    while (const dirent* entry = ::readdir(handle)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") {
            names.push_back(name);
        }
    }
    ::closedir(handle);
    return names;
}

} // namespace venvtx
