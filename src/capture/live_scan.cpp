// scan_live: directories read through their descriptors, one fstatat per leaf, none per
// directory whose type readdir already gave.
#include "venvtx/capture/live_scan.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <iterator>
#include <sys/stat.h>
#include <thread>

namespace venvtx {

namespace {

// How many directories the top levels must offer before the workers take over.
constexpr std::size_t k_shared_out = 32;

std::int64_t nanoseconds(const struct timespec& time) {
    return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
}

// A leaf changed: another inode, type, mode, size or mtime, or a ctime that moved without its
// link count (a write whose mtime was set back, an xattr).
bool leaf_changed(const LiveNode& was, const LiveNode& now) {
    return now.inode != was.inode || now.type != was.type || now.mode != was.mode || now.size != was.size ||
           now.mtime_ns != was.mtime_ns || (now.ctime_ns != was.ctime_ns && now.links == was.links);
}

bool by_path(const std::pair<std::string, LiveNode>& a, const std::pair<std::string, LiveNode>& b) {
    return a.first < b.first;
}

NodeType type_of(mode_t mode) {
    return S_ISDIR(mode) ? NodeType::dir : S_ISREG(mode) ? NodeType::file
                                         : S_ISLNK(mode) ? NodeType::symlink : NodeType::special;
}

class LiveWalker {
public:
    LiveWalker(LiveScan& scan, const std::string& store_name) : m_scan(scan), m_store_name(store_name) {}

    // The directory `name` of `parent_fd`, venv-relative `rel_dir` ("" for the root). Its
    // subdirectories are walked too, or, given `deferred`, only listed there.
    void walk(int parent_fd, const char* name, const std::string& rel_dir, std::vector<std::string>* deferred = nullptr) {
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
            m_scan.emplace_back(rel, node);
            if (node.type == NodeType::dir) {
                if (deferred) {
                    deferred->push_back(std::move(rel));
                } else {
                    walk(own, leaf.c_str(), rel);
                }
            }
        }
        ::closedir(handle);
    }

private:
    LiveScan& m_scan;
    const std::string& m_store_name;  // the store's name at the venv's top, when it lives there
};

// A directory of the venv, reached from its root without following any symlink; -1 when it is
// gone or no longer a directory (a scan runs beside whatever else changes the venv).
int open_below(const std::filesystem::path& root, const std::string& rel) {
    try {
        ParentDir parent = Confinement::instance().open_parent(root / rel);
        return ::openat(parent.dir.get(), parent.leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } catch (const std::exception&) {
        return -1;
    }
}

} // namespace

LiveScan scan_live(const VenvLayout& layout, const std::filesystem::path& store_root) {
    LiveScan scan;
    UniqueFd root(::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
        throw system_error("open " + layout.root.string(), errno);
    }
    std::string store_name = store_root.parent_path() == layout.root ? store_root.filename().string() : "";
    // The top levels here, level by level, until there are directories enough to share out
    // (site-packages' packages); each then walked whole by one of the workers.
    std::vector<std::string> frontier{""};
    while (!frontier.empty() && frontier.size() < k_shared_out) {
        std::vector<std::string> next;
        for (const auto& rel : frontier) {
            UniqueFd dir(rel.empty() ? ::dup(root.get()) : open_below(layout.root, rel));
            if (dir.valid()) {
                LiveWalker(scan, store_name).walk(dir.get(), ".", rel, &next);
            }
        }
        frontier = std::move(next);
    }
    std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
    std::vector<LiveScan> parts(workers);
    std::atomic<std::size_t> taken{0};
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            LiveWalker walker(parts[w], store_name);
            for (std::size_t i = taken++; i < frontier.size(); i = taken++) {
                UniqueFd dir(open_below(layout.root, frontier[i]));
                if (dir.valid()) {
                    walker.walk(dir.get(), ".", frontier[i]);
                }
            }
            std::sort(parts[w].begin(), parts[w].end(), by_path); // sorted on every core, merged below
        });
    }
    std::sort(scan.begin(), scan.end(), by_path);
    for (auto& thread : threads) {
        thread.join();
    }
    for (auto& part : parts) {
        LiveScan merged;
        merged.reserve(scan.size() + part.size());
        std::merge(std::make_move_iterator(scan.begin()), std::make_move_iterator(scan.end()),
                   std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()),
                   std::back_inserter(merged), by_path);
        scan = std::move(merged);
    }
    return scan;
}

std::vector<LiveChange> live_changes(const LiveScan& before, const LiveScan& after) {
    std::vector<LiveChange> changes;
    auto was = before.begin();
    auto now = after.begin();
    while (was != before.end() || now != after.end()) {
        if (now == after.end() || (was != before.end() && was->first < now->first)) {
            changes.push_back({was->first, "removed"});
            ++was;
        } else if (was == before.end() || now->first < was->first) {
            changes.push_back({now->first, "added"});
            ++now;
        } else {
            const LiveNode& a = was->second;
            const LiveNode& b = now->second;
            if (a.type != b.type || (a.type != NodeType::dir && leaf_changed(a, b))) {
                changes.push_back({now->first, "modified"});
            }
            ++was;
            ++now;
        }
    }
    return changes;
}

} // namespace venvtx
