// Confinement: resolving paths beneath the venv's (or the store's) root without symlinks.
#include "venvtx/core/confinement.hpp"

#include "venvtx/core/fs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <cstdlib>
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
    // VENVTX_NO_OPENAT2=1 takes the walk as on a kernel without openat2, so that tests run it.
    static bool have_openat2 = std::getenv("VENVTX_NO_OPENAT2") == nullptr;
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

// An absolute path with no empty, "." or ".." component and no trailing slash: already in the
// form lexically_normal() gives, so it can be split as a string.
bool is_plain_absolute(const std::string& text) {
    if (text.size() < 2 || text.front() != '/' || text.back() == '/') {
        return false;
    }
    for (std::size_t start = 1; start <= text.size();) {
        std::size_t end = text.find('/', start);
        end = end == std::string::npos ? text.size() : end;
        std::size_t length = end - start;
        if (length == 0 || (length == 1 && text[start] == '.') ||
            (length == 2 && text[start] == '.' && text[start + 1] == '.')) {
            return false;
        }
        start = end + 1;
    }
    return true;
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
    // Each root is the user's own path, reached as given: opened once here (one that does not
    // exist yet, such as a store still to be made, is opened on each use).
    m_root_fds.clear();
    for (const auto& root : m_roots) {
        m_root_fds.emplace_back(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    }
}

void Confinement::reopen_roots() {
    set_roots(m_roots);
}

void Confinement::add_root(const stdfs::path& root) {
    std::vector<stdfs::path> roots = m_roots;
    roots.push_back(root);
    set_roots(std::move(roots));
}

bool Confinement::split(const stdfs::path& path, std::size_t& root_index, std::string& rel) const {
    std::string text;
    if (is_plain_absolute(path.native())) {
        text = path.native();
    } else {
        stdfs::path normal = path.lexically_normal();
        for (const auto& part : normal) {
            if (part == "..") {
                return false;
            }
        }
        text = normal.string();
        while (text.size() > 1 && text.back() == '/') {
            text.pop_back();
        }
    }
    for (std::size_t i = 0; i < m_roots.size(); ++i) {
        const std::string& base = m_roots[i].native();
        if (text == base) {
            root_index = i;
            rel.clear();
            return true;
        }
        if (text.size() > base.size() && text.compare(0, base.size(), base) == 0 &&
            (base == "/" || text[base.size()] == '/')) {
            root_index = i;
            rel = text.substr(base == "/" ? 1 : base.size() + 1);
            return true;
        }
    }
    return false;
}

bool Confinement::contains(const stdfs::path& path) const {
    std::size_t root = 0;
    std::string rel;
    return split(path, root, rel);
}

UniqueFd Confinement::open_beneath(std::size_t root, const std::string& rel, int flags) const {
    UniqueFd opened;
    int root_fd = m_root_fds[root].get();
    if (root_fd < 0) {
        opened = UniqueFd(::open(m_roots[root].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!opened.valid()) {
            return UniqueFd();
        }
        root_fd = opened.get();
    }
    return UniqueFd(open_no_symlinks(root_fd, rel, flags));
}

ParentDir Confinement::open_parent(const stdfs::path& path) const {
    std::size_t root = 0;
    std::string rel;
    if (!split(path, root, rel) || rel.empty()) {
        refuse_outside(path);
    }
    std::size_t slash = rel.rfind('/');
    ParentDir parent;
    parent.leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
    parent.dir = open_beneath(root, slash == std::string::npos ? std::string() : rel.substr(0, slash),
                              O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!parent.dir.valid()) {
        refuse(path, errno);
    }
    return parent;
}

UniqueFd Confinement::open_dir(const stdfs::path& path) const {
    std::size_t root = 0;
    std::string rel;
    if (!split(path, root, rel)) {
        refuse_outside(path);
    }
    UniqueFd dir = open_beneath(root, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!dir.valid()) {
        refuse(path, errno);
    }
    return dir;
}

bool Confinement::stat_node(const stdfs::path& path, struct stat& st) const {
    std::size_t root = 0;
    std::string rel;
    if (!split(path, root, rel) || rel.empty()) {
        return ::lstat(path.c_str(), &st) == 0;
    }
    std::size_t slash = rel.rfind('/');
    UniqueFd dir = open_beneath(root, slash == std::string::npos ? std::string() : rel.substr(0, slash),
                                O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!dir.valid()) {
        return false;
    }
    const char* leaf = rel.c_str() + (slash == std::string::npos ? 0 : slash + 1);
    return ::fstatat(dir.get(), leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
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
