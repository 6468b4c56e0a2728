// Containment: every path venvtx changes lies beneath a registered root (the venv, a store
// placed elsewhere) and is reached from that root's directory without following a symlink on
// any component — openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), or an O_NOFOLLOW walk where
// the kernel lacks it. The last component is never followed either: the *at calls act on it.
#pragma once

#include "venvtx/core/unique_fd.hpp"

#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace venvtx {

// A directory opened beneath its root, and the name of one entry in it.
struct ParentDir {
    UniqueFd dir;
    std::string leaf;
};

class Confinement {
  public:
    static Confinement& instance();

    // The roots mutations may happen beneath (absolute). A root inside another root is reached
    // through it, so a store inside the venv is contained by the venv's rules too.
    void set_roots(std::vector<std::filesystem::path> roots);
    // One more root: a private directory venvtx made for itself (a what-if's layer).
    void add_root(const std::filesystem::path& root);
    // Opens the roots again by path: after a mount over one of them (a preview's overlay), the
    // descriptors opened before still lead to the directory beneath the mount.
    void reopen_roots();

    // Whether `path` lies lexically beneath a root (".." components never do).
    bool contains(const std::filesystem::path& path) const;
    // The directory that holds `path`, opened without following symlinks. Throws FsError:
    // EPERM outside every root, ELOOP where a component is a symlink, ENOENT/ENOTDIR.
    ParentDir open_parent(const std::filesystem::path& path) const;
    // `path` itself, which must be a directory (a root, or beneath one), opened O_RDONLY.
    UniqueFd open_dir(const std::filesystem::path& path) const;
    // The names in directory `dir` (no "." or ".."), reached as open_dir does; none when it is
    // absent or not a directory.
    std::vector<std::string> names_in(const std::filesystem::path& dir) const;
    // lstat through open_parent; false (errno set) when it cannot be reached or is absent.
    bool stat_node(const std::filesystem::path& path, struct stat& st) const;

  private:
    // The outermost root holding `path` (its index), and `path` relative to it ("" for the
    // root itself).
    bool split(const std::filesystem::path& path, std::size_t& root, std::string& rel) const;
    UniqueFd open_beneath(std::size_t root, const std::string& rel, int flags) const;

    std::vector<std::filesystem::path> m_roots;
    std::vector<UniqueFd> m_root_fds;  // -1 where the root did not exist when it was set
};

} // namespace venvtx
