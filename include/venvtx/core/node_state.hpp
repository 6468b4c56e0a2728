// What one path is on disk: absent, a file, a symlink or a directory, with the attributes
// venvtx restores exactly (mode, size, mtime, link target) and, for files, a content hash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>

namespace venvtx {

// special: a fifo, socket or device node (no content; its kind is kept in link_target).
enum class NodeType { absent, file, symlink, dir, special };

struct NodeState {
    NodeType type = NodeType::absent;
    mode_t mode = 0;          // permission bits only
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string link_target;  // symlinks; special nodes: fifo, socket, char or block
    std::string object;       // files: SHA-256 hex of the content, once known
    std::int64_t uid = -1;    // directories: owner and group as observed (-1: not known)
    std::int64_t gid = -1;
};

// lstat of `path`, reached without following any symlink (see Confinement): a path below a
// symlinked directory is absent.
NodeState observe_node(const std::filesystem::path& path);
// The same, from an lstat the caller already made.
NodeState node_from_stat(const std::filesystem::path& path, const struct stat& st);

// Same type, mode and link target, and for files the same size and mtime (content unread).
bool same_node_state(const NodeState& a, const NodeState& b);

// A node without directory contents: a file, a symlink or a special node.
bool is_leaf(NodeType type);

const char* node_type_name(NodeType type);
NodeType node_type_from_name(const std::string& name);

} // namespace venvtx
