// observe_node: lstat into a NodeState.
#include "venvtx/core/node_state.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace venvtx {

NodeState observe_node(const std::filesystem::path& path) {
    struct stat st {};
    if (!Confinement::instance().stat_node(path, st)) {
        // Not there, or only through a symlinked directory: not a node of the venv.
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV) {
            return {};
        }
        throw system_error("stat " + path.string(), errno);
    }
    return node_from_stat(path, st);
}

NodeState node_from_stat(const std::filesystem::path& path, const struct stat& st) {
    NodeState state;
    state.mode = st.st_mode & 07777;
    state.size = static_cast<std::uint64_t>(st.st_size);
    state.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (S_ISREG(st.st_mode)) {
        state.type = NodeType::file;
    } else if (S_ISDIR(st.st_mode)) {
        state.type = NodeType::dir;
        state.size = 0;
        state.uid = st.st_uid;
        state.gid = st.st_gid;
    } else if (S_ISLNK(st.st_mode)) {
        state.type = NodeType::symlink;
        std::vector<char> buffer(static_cast<size_t>(st.st_size) + 1);
        ssize_t n = ::readlink(path.c_str(), buffer.data(), buffer.size());
        if (n < 0) {
            throw system_error("readlink " + path.string(), errno);
        }
        state.link_target.assign(buffer.data(), static_cast<size_t>(n));
    } else {
        state.type = NodeType::special;
        state.size = 0;
        state.link_target = S_ISFIFO(st.st_mode)   ? "fifo"
                            : S_ISSOCK(st.st_mode) ? "socket"
                            : S_ISCHR(st.st_mode)  ? "char"
                                                   : "block";
    }
    return state;
}

bool same_node_state(const NodeState& a, const NodeState& b) {
    return a.type == b.type && a.mode == b.mode && a.link_target == b.link_target &&
           (a.type != NodeType::file || (a.size == b.size && a.mtime_ns == b.mtime_ns));
}

bool is_leaf(NodeType type) {
    return type == NodeType::file || type == NodeType::symlink || type == NodeType::special;
}

const char* node_type_name(NodeType type) {
    switch (type) {
    case NodeType::absent:
        return "absent";
    case NodeType::file:
        return "file";
    case NodeType::symlink:
        return "symlink";
    case NodeType::dir:
        return "dir";
    case NodeType::special:
        return "special";
    }
    return "absent";
}

NodeType node_type_from_name(const std::string& name) {
    if (name == "file") {
        return NodeType::file;
    }
    if (name == "symlink") {
        return NodeType::symlink;
    }
    if (name == "dir") {
        return NodeType::dir;
    }
    if (name == "special") {
        return NodeType::special;
    }
    return NodeType::absent;
}

} // namespace venvtx
