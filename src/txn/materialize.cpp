// materialize: write recorded states back into the venv.
#include "venvtx/txn/materialize.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/txn/entry_order.hpp"

#include <map>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

const NodeState& target_of(const Entry& entry, Side side) {
    return side == Side::before ? entry.before : entry.after;
}

bool is_leaf(NodeType type) { return type == NodeType::file || type == NodeType::symlink; }

// Same inode metadata: the very file we moved out and back, or a finished earlier restore.
bool already_there(const NodeState& current, const NodeState& target) {
    if (current.type != target.type) {
        return false;
    }
    if (target.type == NodeType::symlink) {
        return current.link_target == target.link_target;
    }
    return current.size == target.size && current.mode == target.mode &&
           current.mtime_ns == target.mtime_ns;
}

void fix_attributes(const stdfs::path& path, const NodeState& target) {
    NodeState now = observe_node(path);
    if (now.mode != target.mode) {
        Fs::instance().chmod(path, target.mode);
    }
    if (now.mtime_ns != target.mtime_ns) {
        Fs::instance().set_mtime(path, target.mtime_ns);
    }
}

class Materializer {
public:
    Materializer(const VenvLayout& layout, ObjectStore& objects, std::vector<Entry>& entries,
                 Side side, const MaterializeSources& sources)
        : m_layout(layout), m_objects(objects), m_entries(entries), m_side(side), m_sources(sources) {
        for (const auto& entry : entries) {
            const NodeState& target = target_of(entry, side);
            if (target.type == NodeType::file && m_sources.movable.count(target.object) != 0) {
                ++m_remaining_uses[target.object];
            }
        }
    }

    std::vector<std::string> run() {
        for (Entry* entry : dirs_shallowest_first(m_entries)) {
            make_dir(*entry);
        }
        for (auto& entry : m_entries) {
            place_leaf(entry);
        }
        for (Entry* entry : dirs_deepest_first(m_entries)) {
            const NodeState& target = target_of(*entry, m_side);
            stdfs::path path = m_layout.root / entry->path;
            if (target.type == NodeType::absent && observe_node(path).type == NodeType::dir) {
                Fs::instance().rmdir(path);
            }
        }
        Fs::instance().sync_filesystem(m_layout.root);
        return m_moved;
    }

private:
    void make_dir(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        if (target.type != NodeType::dir) {
            return;
        }
        stdfs::path path = m_layout.root / entry.path;
        NodeState current = observe_node(path);
        if (is_leaf(current.type)) {
            Fs::instance().unlink(path);
            current = NodeState{};
        }
        if (current.type == NodeType::absent) {
            Fs::instance().mkdir(path, target.mode);
        }
        if (observe_node(path).mode != target.mode) {
            Fs::instance().chmod(path, target.mode);
        }
    }

    void place_leaf(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        if (target.type == NodeType::dir) {
            return;
        }
        Fs& fs = Fs::instance();
        stdfs::path path = m_layout.root / entry.path;
        NodeState current = observe_node(path);
        if (target.type == NodeType::absent) {
            if (is_leaf(current.type)) {
                fs.unlink(path);
            }
            return;
        }
        if (already_there(current, target)) {
            consume_use(target.object);
            return;
        }
        if (current.type == NodeType::dir) {
            fs.rmdir(path);
        }
        if (target.type == NodeType::symlink) {
            stdfs::path temporary = temporary_path_for(path, entry.id);
            fs.symlink(target.link_target, temporary);
            fs.rename(temporary, path);
            return;
        }
        stdfs::path staged = m_objects.staging_dir(m_sources.staging_tx) / std::to_string(entry.id);
        bool from_staging = m_side == Side::before && m_sources.staging_tx != 0 &&
                            observe_node(staged).type == NodeType::file;
        if (!from_staging && !m_objects.has(target.object) && current.type == NodeType::file &&
            sha256_file(path).hex == target.object) {
            // An interrupted restore renamed the object here but did not finish its attributes.
            consume_use(target.object);
            fix_attributes(path, target);
            return;
        }
        if (!from_staging && !m_objects.has(target.object)) {
            throw Error(ExitCode::internal, "cannot restore " + entry.path + ": store object " +
                                                target.object + " is missing");
        }
        if (from_staging) {
            fs.move(staged, path, target.mode); // never adopted: the original inode goes straight back
        } else if (consume_use(target.object)) {
            fs.move(m_objects.object_path(target.object), path, target.mode);
            m_moved.push_back(target.object);
        } else {
            stdfs::path temporary = temporary_path_for(path, entry.id);
            fs.copy_file(m_objects.object_path(target.object), temporary, target.mode);
            fs.rename(temporary, path);
        }
        fix_attributes(path, target);
    }

    // True when this is the last use of a movable object: it may then be renamed, not copied.
    bool consume_use(const std::string& object) {
        auto found = m_remaining_uses.find(object);
        if (found == m_remaining_uses.end()) {
            return false;
        }
        return --found->second == 0;
    }

    const VenvLayout& m_layout;
    ObjectStore& m_objects;
    std::vector<Entry>& m_entries;
    Side m_side;
    const MaterializeSources& m_sources;
    std::map<std::string, int> m_remaining_uses;
    std::vector<std::string> m_moved;
};

} // namespace

stdfs::path temporary_path_for(const stdfs::path& path, std::int64_t entry_id) {
    return path.parent_path() / (".venvtx-tmp-" + std::to_string(entry_id) + "-" + path.filename().string());
}

void verify_needed_objects(const ObjectStore& objects, const std::vector<Entry>& entries, Side side,
                           const MaterializeSources& sources) {
    std::set<std::string> checked;
    for (const auto& entry : entries) {
        const NodeState& target = target_of(entry, side);
        if (target.type != NodeType::file || sources.movable.count(target.object) != 0 ||
            !checked.insert(target.object).second) {
            continue;
        }
        if (target.object.empty()) {
            throw Error(ExitCode::internal, "no stored content for " + entry.path + ": cannot restore it");
        }
        try {
            objects.verify(target.object);
        } catch (const Error& error) {
            throw Error(error.code(), std::string(error.what()) + "; needed for " + entry.path +
                                          ": nothing was changed");
        }
    }
}

std::vector<std::string> materialize(const VenvLayout& layout, ObjectStore& objects,
                                     std::vector<Entry>& entries, Side side,
                                     const MaterializeSources& sources) {
    return Materializer(layout, objects, entries, side, sources).run();
}

} // namespace venvtx
