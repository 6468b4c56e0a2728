// What scan_live and changes_since share: a node from an lstat, a directory's names, the
// venv's own entries left out, and the walk shared out among workers.
#pragma once

#include "venvtx/capture/live_scan.hpp"

#include <functional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace venvtx::live {

// How many directories the top levels must offer before the workers take over.
constexpr std::size_t k_shared_out = 32;

// A filesystem that stamps in whole 10 ms (FAT's, exFAT's, one that keeps seconds) may stamp a
// change up to 2 s before the clock read just before it.
constexpr std::int64_t k_coarse_stamp_ns = 10'000'000;

LiveNode node_of(const struct stat& st);

std::string joined(const std::string& rel_dir, const std::string& name);

struct Listed {
    std::string name;
    unsigned char d_type;  // DT_DIR, ... or DT_UNKNOWN
};

// The names in the directory open at `fd` (venv-relative `rel_dir`), sorted, but "." and ".."
// and, at the top, venvtx's own: its lock (shared with uv) and the store when it lives there.
std::vector<Listed> list_dir(int fd, const std::string& rel_dir, const std::string& store_name);

// The store's name at the venv's top, or "" when it lives elsewhere.
std::string store_name_in(const VenvLayout& layout, const std::filesystem::path& store_root);

// A directory of the venv reached from its root without following any symlink; -1 when it is
// gone or no longer a directory (a scan runs beside whatever else changes the venv).
int open_below(const std::filesystem::path& root, const std::string& rel);

// A directory whose entries are still to be read into `entry`.
struct Pending {
    std::string rel;
    LiveEntry* entry;
};

// Reads the directory open at `fd` (venv-relative `rel`) into `into`: its own node and its
// entries, and its subdirectories' too or, given `deferred`, only listed there for later.
void read_tree(int fd, const std::string& rel, LiveEntry& into, const std::string& store_name,
               std::vector<Pending>* deferred = nullptr);

// Calls work(worker, i) for every i below `count`, on as many workers as there are cores (8
// at most); `worker` tells each its own output.
std::size_t worker_count();
void on_workers(std::size_t count, const std::function<void(std::size_t worker, std::size_t i)>& work);

} // namespace venvtx::live
