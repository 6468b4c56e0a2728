// scan_live: each directory read through its descriptor into a tree, one fstatat per leaf and
// one fstat per directory; the top levels here, the packages below them on every core.
#include "venvtx/capture/live_scan.hpp"

#include "live_walk.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

namespace venvtx {

namespace {

std::size_t count_paths(const LiveDir& dir) {
    std::size_t paths = dir.entries.size();
    for (const auto& entry : dir.entries) {
        if (entry.dir) {
            paths += count_paths(*entry.dir);
        }
    }
    return paths;
}

// The root's ctime is not in whole 10 ms: its filesystem stamps finely.
bool stamps_finely(const std::filesystem::path& root) {
    struct stat st {};
    return ::stat(root.c_str(), &st) == 0 && st.st_ctim.tv_nsec % live::k_coarse_stamp_ns != 0;
}

} // namespace

namespace live {

void read_tree(int fd, const std::string& rel, LiveEntry& into, const std::string& store_name,
               std::vector<Pending>* deferred) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        into.node.type = NodeType::absent;
        return;
    }
    into.node = node_of(st);
    into.dir = std::make_unique<LiveDir>();
    std::vector<LiveEntry>& entries = into.dir->entries;
    for (auto& listed : list_dir(fd, rel, store_name)) {
        LiveEntry entry;
        entry.name = std::move(listed.name);
        if (listed.d_type == DT_DIR) {
            entry.node.type = NodeType::dir; // its node is read with its entries
        } else if (::fstatat(fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            entry.node = node_of(st);
        } else {
            continue; // gone since it was listed
        }
        entries.push_back(std::move(entry));
    }
    for (auto& entry : entries) {
        if (entry.node.type != NodeType::dir) {
            continue;
        }
        std::string child_rel = joined(rel, entry.name);
        if (deferred) {
            deferred->push_back({std::move(child_rel), &entry});
            continue;
        }
        UniqueFd child(::openat(fd, entry.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (child.valid()) {
            read_tree(child.get(), child_rel, entry, store_name);
        } else {
            entry.node.type = NodeType::absent; // gone, or replaced by something else, since it was listed
        }
    }
}

} // namespace live

std::int64_t fs_clock_now() {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

LiveScan scan_live(const VenvLayout& layout, const std::filesystem::path& store_root) {
    LiveScan scan;
    scan.started_ns = fs_clock_now();
    UniqueFd root(::open(layout.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
        throw system_error("open " + layout.root.string(), errno);
    }
    std::string store_name = live::store_name_in(layout, store_root);
    scan.root.node.type = NodeType::dir;
    std::vector<live::Pending> frontier{{"", &scan.root}};
    while (!frontier.empty() && frontier.size() < live::k_shared_out) {
        std::vector<live::Pending> next;
        for (auto& [rel, entry] : frontier) {
            UniqueFd dir(rel.empty() ? ::dup(root.get()) : live::open_below(layout.root, rel));
            if (dir.valid()) {
                live::read_tree(dir.get(), rel, *entry, store_name, &next);
            } else {
                entry->node.type = NodeType::absent;
            }
        }
        frontier = std::move(next);
    }
    live::on_workers(frontier.size(), [&](std::size_t, std::size_t i) {
        UniqueFd dir(live::open_below(layout.root, frontier[i].rel));
        if (dir.valid()) {
            live::read_tree(dir.get(), frontier[i].rel, *frontier[i].entry, store_name);
        } else {
            frontier[i].entry->node.type = NodeType::absent;
        }
    });
    scan.paths = scan.root.dir ? count_paths(*scan.root.dir) : 0;
    return scan;
}

LiveScanning::LiveScanning(const VenvLayout& layout, const std::filesystem::path& store_root,
                           std::optional<std::int64_t> quiet_since) {
    if (!quiet_since || !stamps_finely(layout.root)) {
        std::promise<LiveScan> now;
        now.set_value(scan_live(layout, store_root));
        m_scan = now.get_future().share();
        return;
    }
    std::int64_t started = fs_clock_now();
    while (started <= *quiet_since) {
        ::sched_yield(); // a tick is 1 to 4 ms; the versions read since took most of it
        started = fs_clock_now();
    }
    sigset_t all;
    sigset_t was;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &was); // signals stay the main thread's, which forwards them
    const Fs& fs = Fs::instance(); // made here: a fork beside its making would inherit its lock
    m_scan = std::async(std::launch::async, [layout, store_root, started, &fs] {
                 fs.hook("live_scan"); // a test's command changes the venv first
                 LiveScan scan = scan_live(layout, store_root);
                 scan.started_ns = started; // read here, before the command starts
                 scan.beside_command = true;
                 return scan;
             }).share();
    ::pthread_sigmask(SIG_SETMASK, &was, nullptr);
}

const LiveScan& LiveScanning::get() { return m_scan.get(); }

} // namespace venvtx
