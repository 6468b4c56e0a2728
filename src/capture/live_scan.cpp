// scan_live: directories read through their descriptors, one fstatat per leaf, none per
// directory whose type readdir already gave.
#include "venvtx/capture/live_scan.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

namespace venvtx {

namespace {

std::int64_t nanoseconds(const struct timespec& time) {
    return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

// A leaf changed: another inode, type, mode, size or mtime, or a ctime that moved without its
// link count (a write whose mtime was set back, an xattr).
bool leaf_changed(const LiveNode& was, const LiveNode& now) {
    return now.inode != was.inode || now.type != was.type || now.mode != was.mode || now.size != was.size ||
           now.mtime_ns != was.mtime_ns || (now.ctime_ns != was.ctime_ns && now.links == was.links);
}

NodeType type_of(mode_t mode) {
    return S_ISDIR(mode) ? NodeType::dir : S_ISREG(mode) ? NodeType::file
                                         : S_ISLNK(mode) ? NodeType::symlink : NodeType::special;
}

class LiveWalker {
public:
    LiveWalker(LiveScan& scan, std::string store_name) : m_scan(scan), m_store_name(std::move(store_name)) {}

    // The directory `name` of `parent_fd`, venv-relative `rel_dir` ("" for the root).
    void walk(int parent_fd, const char* name, const std::string& rel_dir) {
        int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            return; // gone, or replaced by something else since its parent was read
        }
        DIR* handle = ::fdopendir(fd);
        if (!handle) {
            ::close(fd);
            return;
        }
        std::vector<std::pair<std::string, unsigned char>> names;
        while (dirent* entry = ::readdir(handle)) {
            std::string found = entry->d_name;
            if (found == "." || found == "..") {
                continue;
            }
            if (rel_dir.empty() && (found == ".lock" || found == m_store_name)) {
                continue; // venvtx's own files, and the lock uv shares
            }
            names.emplace_back(std::move(found), entry->d_type);
        }
        int own = ::dirfd(handle);
        for (const auto& [leaf, d_type] : names) {
            std::string rel = rel_dir.empty() ? leaf : rel_dir + "/" + leaf;
            LiveNode node;
            if (d_type == DT_DIR) {
                node.type = NodeType::dir;
            } else {
                struct stat st {};
                if (::fstatat(own, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    continue; // gone since readdir
                }
                node = {type_of(st.st_mode), st.st_ino, nanoseconds(st.st_ctim), st.st_nlink,
                        static_cast<mode_t>(st.st_mode & 07777), static_cast<std::int64_t>(st.st_size),
                        nanoseconds(st.st_mtim)};
            }
            m_scan[rel] = node;
            if (node.type == NodeType::dir) {
                walk(own, leaf.c_str(), rel);
            }
        }
        ::closedir(handle);
    }

private:
    LiveScan& m_scan;
    std::string m_store_name;  // the store's name at the venv's top, when it lives there
};

} // namespace

LiveScan scan_live(const VenvLayout& layout, const std::filesystem::path& store_root) {
    LiveScan scan;
    scan.reserve(1 << 16);
    UniqueFd root(::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
        throw system_error("open " + layout.root.string(), errno);
    }
    std::string store_name = store_root.parent_path() == layout.root ? store_root.filename().string() : "";
    LiveWalker(scan, store_name).walk(root.get(), ".", "");
    return scan;
}

std::vector<LiveChange> live_changes(const LiveScan& before, const LiveScan& after) {
    std::vector<LiveChange> changes;
    for (const auto& [path, was] : before) {
        auto now = after.find(path);
        if (now == after.end()) {
            changes.push_back({path, "removed"});
        } else if (now->second.type != was.type || (was.type != NodeType::dir && leaf_changed(was, now->second))) {
            changes.push_back({path, "modified"});
        }
    }
    for (const auto& [path, node] : after) {
        if (before.count(path) == 0) {
            changes.push_back({path, "added"});
        }
    }
    std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    return changes;
}

} // namespace venvtx
