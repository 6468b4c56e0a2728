// changes_since: the scan's tree walked again, each directory read anew only when its ctime
// moved since (or may have moved unseen: it had changed after the scan began), every known
// leaf stat'ed by name. Of a scan that ran beside the command, a node it found stamped after
// it began is named whatever is found now: the scan may have read the command's change.
#include "venvtx/capture/live_scan.hpp"

#include "live_walk.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cerrno>
#include <fcntl.h>
#include <iterator>
#include <string_view>
#include <sys/stat.h>

namespace venvtx {

namespace {

// A ctime within this much of the scan's start may be the same tick as a later change: some
// filesystems keep seconds, or two.
constexpr std::int64_t k_clock_slack_ns = 2'000'000'000;

// A leaf changed: another inode, type, mode, size or mtime.
bool leaf_changed(const LiveNode& was, const LiveNode& now) {
    return now.inode != was.inode || now.type != was.type || now.mode != was.mode || now.size != was.size ||
           now.mtime_ns != was.mtime_ns;
}

// Its ctime moved without its link count: a write whose mtime was set back, an xattr (or a
// switch relinking it, which the caller rules out).
bool ctime_moved(const LiveNode& was, const LiveNode& now) {
    return now.ctime_ns != was.ctime_ns && now.links == was.links;
}

// Stamped at or after `from` (within 2 s before, on a filesystem that stamps coarsely).
bool stamped_since(const LiveNode& node, std::int64_t from) {
    return node.ctime_ns >= from - (node.ctime_ns % live::k_coarse_stamp_ns == 0 ? k_clock_slack_ns : 0);
}

// The entry named `name` in the directory `dir` as scanned, or nullptr.
const LiveEntry* entry_named(const LiveEntry& dir, std::string_view name) {
    if (!dir.dir) {
        return nullptr;
    }
    const std::vector<LiveEntry>& entries = dir.dir->entries;
    auto found = std::lower_bound(entries.begin(), entries.end(), name,
                                  [](const LiveEntry& entry, std::string_view wanted) { return entry.name < wanted; });
    return found != entries.end() && found->name == name ? &*found : nullptr;
}

void sort_by_path(std::vector<LiveChange>& changes) {
    std::sort(changes.begin(), changes.end(), [](const LiveChange& a, const LiveChange& b) { return a.path < b.path; });
}

struct Checking {
    std::string rel;
    const LiveEntry* was;
};

class ChangeFinder {
public:
    // `apart`: paths left out, and with them venvtx's own temporaries (nullptr: none).
    ChangeFinder(LiveCheck& out, const std::string& store_name, const LiveScan& before,
                 const std::set<std::string>* apart = nullptr)
        : m_out(out), m_store_name(store_name), m_racy_after(before.started_ns - k_clock_slack_ns),
          m_beside_from(before.beside_command ? before.started_ns : INT64_MAX), m_apart(apart) {}

    // The directory open at `fd`, venv-relative `rel`, against what `was` held; its
    // subdirectories too or, given `deferred`, only listed there.
    void check_dir(int fd, const std::string& rel, const LiveEntry& was, std::vector<Checking>* deferred = nullptr) {
        struct stat st {};
        if (::fstat(fd, &st) != 0) {
            return;
        }
        LiveNode now = live::node_of(st);
        const std::vector<LiveEntry>& entries = was.dir->entries;
        if (stamped_since(was.node, m_beside_from)) {
            note(rel.empty() ? "." : rel, "modified"); // an entry made or gone before the scan read it
        }
        if (now.inode == was.node.inode && now.ctime_ns == was.node.ctime_ns && was.node.ctime_ns < m_racy_after) {
            for (const auto& entry : entries) {
                if (entry.node.type != NodeType::absent) {
                    check_entry(fd, rel, entry, deferred);
                }
            }
            return;
        }
        ++m_out.reread; // an entry made, removed or renamed here
        std::vector<live::Listed> listed = live::list_dir(fd, rel, m_store_name);
        auto old = entries.begin();
        auto found = listed.begin();
        while (old != entries.end() || found != listed.end()) {
            if (old != entries.end() && old->node.type == NodeType::absent) {
                ++old;
            } else if (found == listed.end() || (old != entries.end() && old->name < found->name)) {
                if (!left_apart(rel, old->name)) {
                    removed(live::joined(rel, old->name), *old);
                }
                ++old;
            } else if (old == entries.end() || found->name < old->name) {
                if (!left_apart(rel, found->name)) {
                    added(fd, rel, found->name);
                }
                ++found;
            } else {
                check_entry(fd, rel, *old, deferred);
                ++old;
                ++found;
            }
        }
    }

    void removed(const std::string& path, const LiveEntry& was) {
        note(path, "removed");
        removed_below(path, was);
    }

    // `name` in the directory open at `fd` (venv-relative `rel`; -1: gone), against `was` (nullptr:
    // not there before).
    void check_name(int fd, const std::string& rel, const std::string& name, const LiveEntry* was) {
        bool there_before = was != nullptr && was->node.type != NodeType::absent;
        if (fd < 0) {
            if (there_before) {
                removed(live::joined(rel, name), *was);
            }
        } else if (there_before) {
            check_entry(fd, rel, *was, nullptr);
        } else {
            added(fd, rel, name);
        }
    }

private:
    // A path left out, or one of venvtx's temporaries beside it: a switch's shadow
    // (`.venvtx-sw-*`), a file written beside its target (`.venvtx-tmp-*`, `.venvtx-move-*`).
    bool left_apart(const std::string& rel, const std::string& name) const {
        return m_apart != nullptr && (name.starts_with(".venvtx-") || m_apart->count(live::joined(rel, name)) != 0);
    }

    void check_entry(int fd, const std::string& rel, const LiveEntry& was, std::vector<Checking>* deferred) {
        if (left_apart(rel, was.name)) {
            return;
        }
        ++m_out.paths;
        if (was.node.type == NodeType::dir) {
            check_subdir(fd, rel, was, deferred);
            return;
        }
        struct stat st {};
        if (::fstatat(fd, was.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            note(live::joined(rel, was.name), "removed");
            return;
        }
        if (stamped_since(was.node, m_beside_from)) {
            note(live::joined(rel, was.name), "modified");
            return;
        }
        LiveNode now = live::node_of(st);
        if (now.type == NodeType::dir) {
            note(live::joined(rel, was.name), "modified"); // a directory now
            added_below(fd, was.name, live::joined(rel, was.name));
        } else if (leaf_changed(was.node, now)) {
            note(live::joined(rel, was.name), "modified");
        } else if (ctime_moved(was.node, now)) {
            note(live::joined(rel, was.name), "modified", true);
        }
    }

    void check_subdir(int fd, const std::string& rel, const LiveEntry& was, std::vector<Checking>* deferred) {
        std::string path = live::joined(rel, was.name);
        UniqueFd child(::openat(fd, was.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (child.valid()) {
            if (deferred) {
                deferred->push_back({std::move(path), &was});
            } else {
                check_dir(child.get(), path, was);
            }
            return;
        }
        struct stat st {};
        bool there = ::fstatat(fd, was.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        note(path, there ? "modified" : "removed"); // no longer a directory, or gone
        removed_below(path, was);
    }

    void removed_below(const std::string& path, const LiveEntry& was) {
        if (!was.dir) {
            return;
        }
        for (const auto& entry : was.dir->entries) {
            if (entry.node.type != NodeType::absent) {
                removed(path + "/" + entry.name, entry);
            }
        }
    }

    void added(int fd, const std::string& rel, const std::string& name) {
        struct stat st {};
        if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return; // made and gone again
        }
        std::string path = live::joined(rel, name);
        note(path, "added");
        if (S_ISDIR(st.st_mode)) {
            added_below(fd, name, path);
        }
    }

    // Everything in the new directory `name` of `fd`.
    void added_below(int fd, const std::string& name, const std::string& path) {
        UniqueFd child(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!child.valid()) {
            return;
        }
        LiveEntry tree;
        live::read_tree(child.get(), path, tree, m_store_name);
        if (tree.dir) {
            note_all(path, *tree.dir);
        }
    }

    void note_all(const std::string& path, const LiveDir& dir) {
        for (const auto& entry : dir.entries) {
            if (entry.node.type != NodeType::absent) {
                note(path + "/" + entry.name, "added");
                if (entry.dir) {
                    note_all(path + "/" + entry.name, *entry.dir);
                }
            }
        }
    }

    void note(std::string path, const char* change, bool ctime_alone = false) {
        m_out.changes.push_back({std::move(path), change, ctime_alone});
    }

    LiveCheck& m_out;
    const std::string& m_store_name;
    std::int64_t m_racy_after;
    std::int64_t m_beside_from;
    const std::set<std::string>* m_apart;
};

} // namespace

namespace {

// The check from the venv's root, but the paths in `apart` (nullptr: none).
LiveCheck check_from_root(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root,
                          const std::set<std::string>* apart) {
    auto started = std::chrono::steady_clock::now();
    LiveCheck check;
    if (!before.root.dir) {
        return check;
    }
    std::string store_name = live::store_name_in(layout, store_root);
    std::vector<Checking> frontier{{"", &before.root}};
    while (!frontier.empty() && frontier.size() < live::k_shared_out) {
        std::vector<Checking> next;
        for (const auto& [rel, was] : frontier) {
            UniqueFd dir(rel.empty() ? ::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                                     : live::open_below(layout.root, rel));
            ChangeFinder finder(check, store_name, before, apart);
            if (dir.valid()) {
                finder.check_dir(dir.get(), rel, *was, &next);
            } else if (rel.empty()) {
                throw system_error("open " + layout.root.string(), errno);
            } else {
                finder.removed(rel, *was);
            }
        }
        frontier = std::move(next);
    }
    std::vector<LiveCheck> parts(live::worker_count());
    live::on_workers(frontier.size(), [&](std::size_t worker, std::size_t i) {
        ChangeFinder finder(parts[worker], store_name, before, apart);
        UniqueFd dir(live::open_below(layout.root, frontier[i].rel));
        if (dir.valid()) {
            finder.check_dir(dir.get(), frontier[i].rel, *frontier[i].was);
        } else {
            finder.removed(frontier[i].rel, *frontier[i].was);
        }
    });
    for (auto& part : parts) {
        check.paths += part.paths;
        check.reread += part.reread;
        std::move(part.changes.begin(), part.changes.end(), std::back_inserter(check.changes));
    }
    sort_by_path(check.changes);
    check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return check;
}

// The entry the scan has at venv-relative `path` ("" its root), or nullptr.
const LiveEntry* scanned_at(const LiveScan& before, const std::string& path) {
    const LiveEntry* entry = &before.root;
    for (std::size_t from = 0; entry != nullptr && from < path.size();) {
        std::size_t slash = std::min(path.find('/', from), path.size());
        entry = entry_named(*entry, std::string_view(path).substr(from, slash - from));
        from = slash + 1;
    }
    return entry;
}

// Another path of `paths` is an ancestor of `path`.
bool below_another(const std::set<std::string>& paths, const std::string& path) {
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
        if (paths.count(path.substr(0, slash)) != 0) {
            return true;
        }
    }
    return false;
}

// What changed at and below each of `paths` since `before`, unsorted.
LiveCheck check_within(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root,
                       const std::set<std::string>& paths) {
    auto started = std::chrono::steady_clock::now();
    LiveCheck check;
    ChangeFinder finder(check, live::store_name_in(layout, store_root), before);
    for (const auto& path : paths) {
        if (path.empty() || below_another(paths, path)) {
            continue; // checked with the ancestor
        }
        std::size_t slash = path.rfind('/');
        std::string parent = slash == std::string::npos ? "" : path.substr(0, slash);
        std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
        const LiveEntry* was_parent = scanned_at(before, parent);
        UniqueFd dir(parent.empty() ? ::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                                    : live::open_below(layout.root, parent));
        finder.check_name(dir.get(), parent, name, was_parent ? entry_named(*was_parent, name) : nullptr);
    }
    check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return check;
}

} // namespace

LiveCheck changes_since(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root) {
    return check_from_root(before, layout, store_root, nullptr);
}

LiveChecking::LiveChecking(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root,
                           std::set<std::string> apart)
    : m_before(before), m_layout(layout), m_store_root(store_root), m_apart(std::move(apart)),
      m_check(live::beside([this] { return check_from_root(m_before, m_layout, m_store_root, &m_apart); })) {}

LiveCheck LiveChecking::finish() {
    LiveCheck check = m_check.get();
    LiveCheck within = check_within(m_before, m_layout, m_store_root, m_apart);
    check.paths += within.paths;
    check.reread += within.reread;
    check.seconds += within.seconds;
    std::move(within.changes.begin(), within.changes.end(), std::back_inserter(check.changes));
    sort_by_path(check.changes);
    return check;
}

} // namespace venvtx
