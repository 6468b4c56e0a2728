// changes_since: the scan's tree walked again, each directory read anew only when its ctime
// moved since (or may have moved unseen: it had changed after the scan began), every known
// leaf stat'ed by name. Of a scan that ran beside the command, a node it found stamped after
// it began is named whatever is found now: the scan may have read the command's change.
#include "venvtx/capture/live_scan.hpp"

#include "live_walk.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <algorithm>
#include <climits>
#include <cerrno>
#include <fcntl.h>
#include <iterator>
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

bool below_any(const std::set<std::string>& units, const std::string& path) {
    if (units.empty()) {
        return false;
    }
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
        if (units.count(path.substr(0, slash)) != 0) {
            return true;
        }
    }
    return units.count(path) != 0;
}

struct Checking {
    std::string rel;
    const LiveEntry* was;
};

class ChangeFinder {
public:
    ChangeFinder(LiveCheck& out, const std::string& store_name, const LiveScan& before,
                 const std::set<std::string>& relinked)
        : m_out(out), m_store_name(store_name), m_racy_after(before.started_ns - k_clock_slack_ns),
          m_beside_from(before.beside_command ? before.started_ns : INT64_MAX), m_relinked(relinked) {}

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
                removed(live::joined(rel, old->name), *old);
                ++old;
            } else if (old == entries.end() || found->name < old->name) {
                added(fd, rel, found->name);
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

private:
    void check_entry(int fd, const std::string& rel, const LiveEntry& was, std::vector<Checking>* deferred) {
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
        } else if (leaf_changed(was.node, now) ||
                   (ctime_moved(was.node, now) && !below_any(m_relinked, live::joined(rel, was.name)))) {
            note(live::joined(rel, was.name), "modified");
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

    void note(std::string path, const char* change) { m_out.changes.push_back({std::move(path), change}); }

    LiveCheck& m_out;
    const std::string& m_store_name;
    std::int64_t m_racy_after;
    std::int64_t m_beside_from;
    const std::set<std::string>& m_relinked;
};

} // namespace

LiveCheck changes_since(const LiveScan& before, const VenvLayout& layout, const std::filesystem::path& store_root,
                        const std::set<std::string>& relinked) {
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
            ChangeFinder finder(check, store_name, before, relinked);
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
        ChangeFinder finder(parts[worker], store_name, before, relinked);
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
    std::sort(check.changes.begin(), check.changes.end(),
              [](const LiveChange& a, const LiveChange& b) { return a.path < b.path; });
    return check;
}

} // namespace venvtx
