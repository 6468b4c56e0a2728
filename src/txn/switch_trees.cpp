// Cloning a unit into its shadow, and clearing its old version once switched.
#include "switch_trees.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"

#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string joined(const std::string& rel, const std::string& name) {
    return rel.empty() ? name : rel + "/" + name;
}

void clone_node(const stdfs::path& from, const stdfs::path& to, const NodeState& node) {
    if (node.type == NodeType::symlink) {
        Fs::instance().symlink(node.link_target, to);
        Fs::instance().take_parent_owner(to);
    } else if (node.type != NodeType::absent) {
        Fs::instance().link(from, to);
    }
}

void clone_below(const stdfs::path& from, const stdfs::path& to, const std::string& rel, const UnitPathTest& skip,
                 std::vector<ClosedDir>& closed, std::vector<stdfs::path>& made) {
    Fs& fs = Fs::instance();
    for (const auto& name : Confinement::instance().names_in(from)) {
        std::string child = joined(rel, name);
        NodeState node = observe_node(from / name);
        if (node.type == NodeType::dir) {
            fs.clone_dir(from / name, to / name);
            made.push_back(to / name);
            if ((node.mode & S_IRWXU) != S_IRWXU) {
                closed.push_back({to / name, node.mode});
            }
            clone_below(from / name, to / name, child, skip, closed, made);
        } else if (!skip(child)) {
            clone_node(from / name, to / name, node);
        }
    }
}

bool same_node(const stdfs::path& a, const stdfs::path& b) {
    struct stat first {};
    struct stat second {};
    const Confinement& confinement = Confinement::instance();
    if (!confinement.stat_node(a, first) || !confinement.stat_node(b, second)) {
        return false;
    }
    if (S_ISLNK(first.st_mode) && S_ISLNK(second.st_mode)) {
        return observe_node(a).link_target == observe_node(b).link_target;
    }
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

bool in_bytecode_cache(const std::string& rel) {
    for (const auto& part : stdfs::path(rel)) {
        if (part == "__pycache__") {
            return true;
        }
    }
    return false;
}

void clear_below(const stdfs::path& old_path, const stdfs::path& live_path, const std::string& rel,
                 const UnitPathTest& ours, std::vector<std::string>& kept) {
    Fs& fs = Fs::instance();
    NodeState node = observe_node(old_path);
    if (node.type == NodeType::absent) {
        return;
    }
    if (node.type != NodeType::dir) {
        if (ours(rel) || in_bytecode_cache(rel) || same_node(old_path, live_path)) {
            fs.unlink(old_path);
        } else {
            kept.push_back(rel);
        }
        return;
    }
    if ((node.mode & S_IRWXU) != S_IRWXU) {
        fs.chmod(old_path, node.mode | S_IRWXU);
    }
    for (const auto& name : Confinement::instance().names_in(old_path)) {
        clear_below(old_path / name, live_path / name, joined(rel, name), ours, kept);
    }
    if (Confinement::instance().names_in(old_path).empty()) {
        fs.rmdir(old_path);
    }
}

} // namespace

stdfs::path exchange_trial_path(const stdfs::path& first_shadow, const char* which) {
    return first_shadow.string() + "-trial-" + which;
}

std::int64_t inode_at(const stdfs::path& path) {
    struct stat st {};
    return Confinement::instance().stat_node(path, st) ? static_cast<std::int64_t>(st.st_ino) : 0;
}

std::vector<ClosedDir> clone_tree(const stdfs::path& from, const stdfs::path& to, const UnitPathTest& skip,
                                  std::vector<stdfs::path>& made) {
    NodeState root = observe_node(from);
    Fs::instance().clone_dir(from, to);
    made.push_back(to);
    std::vector<ClosedDir> closed;
    if ((root.mode & S_IRWXU) != S_IRWXU) {
        closed.push_back({to, root.mode});
    }
    clone_below(from, to, "", skip, closed, made);
    return closed;
}

void clone_leaf(const stdfs::path& from, const stdfs::path& to) {
    clone_node(from, to, observe_node(from));
}

std::vector<std::string> clear_old_tree(const stdfs::path& old_root, const stdfs::path& live_root,
                                        const UnitPathTest& ours) {
    std::vector<std::string> kept;
    clear_below(old_root, live_root, "", ours, kept);
    return kept;
}

} // namespace venvtx
