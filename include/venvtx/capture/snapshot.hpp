// A snapshot of every path in a venv (but the store and .lock): what an external command may
// change. Files carry their inode, so a replaced file (new inode) is told from one changed in
// place (same inode, new size or mtime).
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <sys/types.h>

namespace venvtx {

struct InodeFacts {
    dev_t device = 0;
    ino_t inode = 0;
    nlink_t links = 0;  // its names when the snapshot was taken
};

struct VenvSnapshot {
    std::map<std::string, NodeState> states;  // venv-relative path -> state
    std::map<std::string, InodeFacts> inodes; // files only
};

VenvSnapshot snapshot_venv(const VenvLayout& layout, const std::filesystem::path& store_root);
// The same, for what lies below one directory of the venv (`rel_dir`, venv-relative).
VenvSnapshot snapshot_below(const VenvLayout& layout, const std::string& rel_dir,
                            const std::filesystem::path& store_root);

} // namespace venvtx
