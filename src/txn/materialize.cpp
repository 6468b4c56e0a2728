// materialize: write recorded states back into the venv.
#include "venvtx/txn/materialize.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/inode_key.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/entry_order.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// Content hashes of the files one run reads before it decides, each kept while the file's inode
// key is the one it was read on: a file that `foreign` hashed is not read again to decide where
// it goes (`return_to_store`). The final check reads afresh.
class ContentHashes {
public:
    const std::string& of(const stdfs::path& path) {
        std::optional<InodeKey> key = inode_key(path);
        auto known = m_known.find(path.string());
        if (key && known != m_known.end() && known->second.first == *key) {
            return known->second.second;
        }
        auto& slot = m_known[path.string()];
        slot = {key.value_or(InodeKey{}), sha256_file(path).hex};
        return slot.second;
    }

private:
    std::map<std::string, std::pair<InodeKey, std::string>> m_known;
};

// The path already holds the target: same type, mode and link target, and for files the same
// size and content (hashed: size and mtime prove nothing after someone else's edit).
bool already_there(ContentHashes& hashes, const stdfs::path& path, const NodeState& current,
                   const NodeState& target) {
    if (current.type != target.type || (current.type != NodeType::absent && current.mode != target.mode)) {
        return false;
    }
    if (target.type == NodeType::symlink || target.type == NodeType::special) {
        return current.link_target == target.link_target;
    }
    if (target.type != NodeType::file) {
        return true;
    }
    return current.size == target.size && !target.object.empty() && hashes.of(path) == target.object;
}

// `current` is what the other side left: the transaction's own node, safe to replace. A file
// is known by its content where the index has its hash (a placed file whose mtime was not yet
// set back when venvtx was killed is still the transaction's), else by size and mtime.
bool is_state(ContentHashes& hashes, const stdfs::path& path, const NodeState& current, const NodeState& expected) {
    if (current.type != expected.type) {
        return false;
    }
    switch (current.type) {
    case NodeType::absent:
    case NodeType::dir:
        return true;
    case NodeType::symlink:
    case NodeType::special:
        return current.link_target == expected.link_target;
    case NodeType::file:
        if (current.size != expected.size) {
            return false;
        }
        return expected.object.empty() ? current.mtime_ns == expected.mtime_ns
                                       : hashes.of(path) == expected.object;
    }
    return false;
}

bool same_inode(const struct stat& st, const InodeKey& key) {
    return static_cast<std::int64_t>(st.st_dev) == key.dev && static_cast<std::int64_t>(st.st_ino) == key.ino;
}

struct PlacedInode {
    ino_t ino;
    std::int64_t ctime_ns;
};

PlacedInode placed_inode(const struct stat& st) {
    return PlacedInode{st.st_ino, static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

std::optional<PlacedInode> inode_of(const stdfs::path& path) {
    struct stat st {};
    if (!Confinement::instance().stat_node(path, st)) {
        return std::nullopt;
    }
    return placed_inode(st);
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

} // namespace

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

    MaterializeResult run() {
        place();
        return check();
    }

    void place() {
        std::uint64_t total_bytes = 0;
        for (const auto& entry : m_entries) {
            total_bytes += target_of(entry, m_side).type == NodeType::file ? target_of(entry, m_side).size : 0;
        }
        Progress::Phase placing(m_side == Side::before ? "restoring" : "applying", m_entries.size(), "paths",
                                total_bytes);
        Fs::instance().hook("place");
        for (Entry* entry : dirs_shallowest_first(m_entries)) {
            guarded(*entry, [&] { make_dir(*entry); });
        }
        for (auto& entry : m_entries) {
            guarded(entry, [&] { place_leaf(entry); });
            const NodeState& target = target_of(entry, m_side);
            Progress::advance(1, target.type == NodeType::file ? target.size : 0);
        }
        for (Entry* entry : dirs_deepest_first(m_entries)) {
            guarded(*entry, [&] { remove_dir(*entry); });
            guarded(*entry, [&] { close_dir(*entry); });
        }
        flush_placed();
        if (m_io_error) {
            throw *m_io_error; // worth another try: the caller leaves the transaction to `recover`
        }
    }

    // Every file this run may have put in place, and every directory whose entries it changed,
    // on disk before the index says so.
    void flush_placed() {
        std::vector<stdfs::path> files;
        std::set<stdfs::path> dirs;
        for (const auto& entry : m_entries) {
            stdfs::path path = where(entry.path);
            if (target_of(entry, m_side).type == NodeType::file) {
                files.push_back(path);
            }
            dirs.insert(path.parent_path());
        }
        Fs::instance().flush(files, dirs, m_layout.root);
    }

    MaterializeResult check() {
        Progress::Phase checking("checking", m_entries.size(), "paths");
        Fs::instance().hook("recheck");
        check_all();
        return {m_moved, std::vector<std::string>(m_unrestored.begin(), m_unrestored.end()), m_returned,
                m_returned_pending, m_linked};
    }

    // The shadows were switched in: every path is where the venv has it now, and each unit's
    // root took a new ctime from its exchange.
    std::vector<std::string> unplaced() const { return {m_unrestored.begin(), m_unrestored.end()}; }

    void switched(const std::vector<std::string>& unit_roots) {
        m_switched = true;
        for (const auto& root : unit_roots) {
            auto placed = m_placed.find(root);
            auto now = inode_of(where(root));
            if (placed != m_placed.end() && now && now->ino == placed->second.ino) {
                placed->second = *now;
            }
        }
    }

private:
    // One path's failure does not stop the others. A symlink or someone else's node in the way
    // is final: the path is reported. An I/O error (EIO, ENOSPC) may pass: the rest goes on,
    // then the first one is thrown so that `recover` tries again. A crash stops everything.
    template <typename Step>
    void guarded(const Entry& entry, Step step) {
        if (m_unrestored.count(entry.path) != 0) {
            return;
        }
        try {
            step();
        } catch (const FsError& error) {
            m_unrestored.insert(entry.path);
            int err = error.errno_value();
            bool blocked = err == ELOOP || err == ENOTDIR || err == EXDEV || err == EPERM || err == EEXIST ||
                           below_unrestored(entry.path);
            if (!blocked && !m_io_error) {
                m_io_error = error;
            }
        }
    }

    bool below_unrestored(const std::string& path) const {
        for (stdfs::path up = stdfs::path(path).parent_path(); !up.empty(); up = up.parent_path()) {
            if (m_unrestored.count(up.string()) != 0) {
                return true;
            }
        }
        return false;
    }

    // Someone else's node at a journaled path is left where it is.
    bool foreign(const Entry& entry, const NodeState& current) {
        const NodeState& target = target_of(entry, m_side);
        const NodeState& other = m_side == Side::before ? entry.after : entry.before;
        stdfs::path path = where(entry.path);
        if (not_the_pending_file(entry, current, other)) {
            m_unrestored.insert(entry.path);
            return true;
        }
        if (is_the_pending_file(entry, current, target) || is_the_pending_file(entry, current, other)) {
            return false; // the pending inode itself: already back, or this transaction's to return
        }
        if (m_sources.owns_every_node || current.type == NodeType::absent || is_state(m_hashes, path, current, other)) {
            return false; // nothing there (a capture moved it away), or what the transaction left
        }
        if (current.type == target.type && !is_leaf(target.type)) {
            return false;
        }
        if (is_leaf(target.type) && (already_there(m_hashes, path, current, target) || never_reached(entry, current))) {
            return false;
        }
        m_unrestored.insert(entry.path);
        return true;
    }

    // A file the transaction never reached: still `planned` and not in staging (venvtx was
    // killed before its capture got there; a capture renames first and saves its progress after),
    // so it is the file journaled, known by the size and mtime journaled (a removal's
    // before-state has no hash until gc stores it). A staged file with the same bytes is a copy
    // of it: a move across filesystems (a store placed elsewhere) killed after its copy and
    // before it unlinked the original. The same for a watched command's `touched` path (its
    // call waits until the pre-image is kept, and fails once venvtx is gone) and a link
    // capture's `snapshot` (the command starts once every file is linked).
    bool never_reached(const Entry& entry, const NodeState& current) {
        const NodeState& target = target_of(entry, m_side);
        bool unreached = entry.progress == EntryProgress::planned || entry.progress == EntryProgress::touched ||
                         entry.progress == EntryProgress::snapshot;
        if (m_side != Side::before || !unreached || target.type != NodeType::file ||
            !target.object.empty() || current.type != NodeType::file || current.mode != target.mode ||
            current.size != target.size || current.mtime_ns != target.mtime_ns || m_sources.staging_tx == 0) {
            return false;
        }
        stdfs::path staged = m_objects.staging_dir(m_sources.staging_tx) / std::to_string(entry.id);
        NodeState copy = observe_node(staged);
        return copy.type == NodeType::absent ||
               (copy.type == NodeType::file && copy.size == current.size &&
                sha256_file(staged).hex == m_hashes.of(where(entry.path)));
    }

    // Where the other side is a pending capture, only its very inode is the transaction's own:
    // size and mtime cannot tell it from a file put there since.
    bool not_the_pending_file(const Entry& entry, const NodeState& current, const NodeState& other) {
        return pending_state(entry, current, other) && !is_pending_inode(entry);
    }

    // `state` is a pending capture (a file known by no hash) and `current` a file at its path.
    bool pending_state(const Entry& entry, const NodeState& current, const NodeState& state) const {
        return current.type == NodeType::file && state.type == NodeType::file && state.object.empty() &&
               m_sources.pending.count(entry.path) != 0;
    }

    bool is_the_pending_file(const Entry& entry, const NodeState& current, const NodeState& target) {
        return pending_state(entry, current, target) && is_pending_inode(entry);
    }

    bool is_pending_inode(const Entry& entry) const {
        struct stat st {};
        return Confinement::instance().stat_node(where(entry.path), st) &&
               same_inode(st, m_sources.pending.at(entry.path).row.key);
    }

    void remove_dir(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        stdfs::path path = where(entry.path);
        if (target.type == NodeType::absent && observe_node(path).type == NodeType::dir) {
            Fs::instance().rmdir(path);
        }
    }

    void make_dir(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        if (target.type != NodeType::dir) {
            return;
        }
        stdfs::path path = where(entry.path);
        NodeState current = observe_node(path);
        if (foreign(entry, current)) {
            return;
        }
        if (is_leaf(current.type)) {
            if (!return_to_store(entry, current)) {
                Fs::instance().unlink(path);
            }
            current = NodeState{};
        }
        // Open to its owner until its entries are in place (close_dir sets the exact mode): a
        // directory without write permission takes no new entry from anyone but root.
        mode_t open = target.mode | S_IRWXU;
        if (current.type == NodeType::absent) {
            Fs::instance().mkdir(path, open);
            restore_owner(path, target);
        }
        if (observe_node(path).mode != open) {
            Fs::instance().chmod(path, open);
        }
    }

    // A node brought back (a restore, a rollback): a directory owned as journaled, else see
    // Fs::take_parent_owner. An apply from a preview layer makes the command's nodes, owned as
    // the command made them.
    void restore_owner(const stdfs::path& path, const NodeState& target = NodeState{}) const {
        if (!m_sources.layer.empty()) {
            return;
        }
        if (target.type == NodeType::dir && target.uid >= 0 && target.gid >= 0) {
            Fs::instance().give_owner(path, static_cast<uid_t>(target.uid), static_cast<gid_t>(target.gid));
        } else {
            Fs::instance().take_parent_owner(path);
        }
    }

    void close_dir(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        stdfs::path path = where(entry.path);
        if (target.type == NodeType::dir && (target.mode & S_IRWXU) != S_IRWXU) { // make_dir left it open
            NodeState current = observe_node(path);
            if (current.type == NodeType::dir && current.mode != target.mode) {
                Fs::instance().chmod(path, target.mode);
            }
        }
    }

    // Unlinks `path`. When it is another name of a file this run placed (a command renamed a
    // directory away: the pre-images of its files were links, and went back under their old
    // names), the unlink moves that file's ctime; the new one is recorded if nothing had moved
    // it since the placing.
    void unlink_name(const stdfs::path& path) {
        struct stat st {};
        auto same = m_placed.end();
        if (Confinement::instance().stat_node(path, st) && st.st_nlink > 1) {
            PlacedInode before = placed_inode(st);
            same = std::find_if(m_placed.begin(), m_placed.end(), [&](const auto& placed) {
                return placed.second.ino == before.ino && placed.second.ctime_ns == before.ctime_ns;
            });
        }
        Fs::instance().unlink(path);
        if (same != m_placed.end()) {
            if (auto now = inode_of(where(same->first)); now && now->ino == same->second.ino) {
                same->second = *now;
            }
        }
    }

    void place_leaf(const Entry& entry) {
        const NodeState& target = target_of(entry, m_side);
        if (target.type == NodeType::dir) {
            return;
        }
        Fs& fs = Fs::instance();
        stdfs::path path = where(entry.path);
        NodeState current = observe_node(path);
        if (foreign(entry, current)) {
            return;
        }
        if (target.type == NodeType::absent) {
            if (is_leaf(current.type) && !return_to_store(entry, current)) {
                unlink_name(path);
            }
            return;
        }
        if (already_there(m_hashes, path, current, target) || never_reached(entry, current)) {
            consume_use(target.object);
            return;
        }
        if (is_the_pending_file(entry, current, target)) {
            fix_attributes(path, target); // renamed back by a restore that was cut short
            if (auto placed = inode_of(path)) {
                m_placed[entry.path] = *placed;
            }
            return;
        }
        if (return_to_store(entry, current)) {
            current = NodeState{}; // set aside first: the target must not be renamed over it
        }
        if (current.type == NodeType::dir) {
            fs.rmdir(path);
        }
        stdfs::path layered = m_sources.layer.empty() ? stdfs::path() : m_sources.layer / entry.path;
        if (!layered.empty() && observe_node(layered).type == target.type) {
            fs.move(layered, path, target.mode); // the node itself (a file hashed when the layer was read)
            if (target.type == NodeType::file) {
                fs.drop_overlay_xattrs(path);
                fix_attributes(path, target);
            }
            if (auto placed = inode_of(path)) {
                m_placed[entry.path] = *placed;
            }
            return;
        }
        if (target.type == NodeType::symlink) {
            stdfs::path temporary = temporary_path_for(path, entry.id);
            fs.symlink(target.link_target, temporary);
            restore_owner(temporary);
            fs.rename(temporary, path);
            return;
        }
        if (target.type == NodeType::special) {
            if (target.link_target != "fifo") {
                m_unrestored.insert(entry.path); // a socket or device cannot be made again from the index
                return;
            }
            stdfs::path temporary = temporary_path_for(path, entry.id);
            fs.mkfifo(temporary, target.mode);
            restore_owner(temporary);
            fs.rename(temporary, path);
            return;
        }
        auto pending = m_sources.pending.find(entry.path);
        if (pending != m_sources.pending.end() && target.type == NodeType::file && target.object.empty()) {
            take(pending->second.staged, path, target.mode, entry); // the removal's very inode, never hashed
            fix_attributes(path, target);
            if (auto placed = inode_of(path)) {
                m_placed[entry.path] = *placed;
            }
            return;
        }
        stdfs::path staged = m_objects.staging_dir(m_sources.staging_tx) / std::to_string(entry.id);
        bool from_staging = m_side == Side::before && m_sources.staging_tx != 0 &&
                            observe_node(staged).type == NodeType::file;
        if (!from_staging && !m_objects.has(target.object) && current.type == NodeType::file &&
            m_hashes.of(path) == target.object) {
            // An interrupted restore renamed the object here but did not finish its attributes.
            consume_use(target.object);
            fix_attributes(path, target);
            return;
        }
        if (!from_staging && !m_objects.has(target.object)) {
            m_unrestored.insert(entry.path); // never captured (its capture failed first), or lost
            return;
        }
        if (from_staging) {
            take(staged, path, target.mode, entry); // never adopted: the original inode goes straight back
        } else if (consume_use(target.object)) {
            take(m_objects.object_path(target.object), path, target.mode, entry, target.object);
            m_moved.push_back(target.object);
        } else {
            stdfs::path temporary = temporary_path_for(path, entry.id);
            fs.copy_file(m_objects.object_path(target.object), temporary, target.mode);
            fs.rename(temporary, path);
        }
        fix_attributes(path, target);
        if (auto placed = inode_of(path)) {
            m_placed[entry.path] = *placed;
        }
    }

    // A returnable object found where something else must be goes back under its object name
    // (a rename over it, or an unlink, would lose it). False when it is not such a file.
    bool return_to_store(const Entry& entry, const NodeState& current) {
        const NodeState& other = m_side == Side::before ? entry.after : entry.before;
        auto pending = m_sources.pending.find(entry.path);
        if (pending != m_sources.pending.end() && other.type == NodeType::file && other.object.empty()) {
            return return_to_staging(entry, current, pending->second);
        }
        if (current.type != NodeType::file || other.type != NodeType::file ||
            m_sources.returnable.count(other.object) == 0 || m_objects.has(other.object)) {
            return false;
        }
        stdfs::path path = where(entry.path);
        if (current.size != other.size || m_hashes.of(path) != other.object) {
            return false;
        }
        stdfs::path stored = m_objects.object_path(other.object);
        Fs::instance().mkdirs(stored.parent_path());
        Fs::instance().move(path, stored, 0444);
        Fs::instance().chmod(stored, 0444);
        m_returned.push_back(other.object);
        return true;
    }

    // A pending capture a rollback renamed into place goes back to the removal's staging area
    // (the same inode: whatever it holds now, it is the only copy). False for anything else;
    // EEXIST (the path stays, reported) when something took its name in staging.
    bool return_to_staging(const Entry& entry, const NodeState& current, const PendingSource& source) {
        stdfs::path path = where(entry.path);
        struct stat st {};
        if (current.type != NodeType::file || !Confinement::instance().stat_node(path, st) ||
            !same_inode(st, source.row.key)) {
            return false;
        }
        if (observe_node(source.staged).type != NodeType::absent) {
            throw FsError(source.staged.string() + ": taken; the only copy of " + entry.path + " stays in the venv",
                          EEXIST);
        }
        Fs::instance().move(path, source.staged, current.mode);
        m_returned_pending.push_back(entry.path);
        return true;
    }

    // Every path against its target, after the fact: a file this run placed is known by its
    // inode and ctime (its bytes came from a hashed source), one it never reached by its size and
    // mtime; any other file is hashed.
    void check_all() {
        for (const auto& entry : m_entries) {
            if (m_unrestored.count(entry.path) != 0) {
                continue;
            }
            const NodeState& target = target_of(entry, m_side);
            stdfs::path path = where(entry.path);
            NodeState current = observe_node(path);
            bool same = current.type == target.type &&
                        (target.type == NodeType::absent ||
                         (current.mode == target.mode && current.link_target == target.link_target));
            if (same && target.type == NodeType::file) {
                auto placed = m_placed.find(entry.path);
                auto now = inode_of(path);
                bool known = placed != m_placed.end() && now && now->ino == placed->second.ino &&
                             now->ctime_ns == placed->second.ctime_ns;
                same = current.size == target.size &&
                       (known || never_reached(entry, current) ||
                        (!target.object.empty() && sha256_file(path).hex == target.object));
            }
            if (!same) {
                m_unrestored.insert(entry.path);
            }
            Progress::advance(1);
        }
    }

    stdfs::path where(const std::string& path) const {
        return m_sources.relocation != nullptr && !m_switched ? m_sources.relocation->locate(m_layout.root, path)
                                                              : m_layout.root / path;
    }

    // Moves `source` to `path`; into the shadow of a unit that is there now, links it there
    // (through a temporary: a rename replaces what the clone put at `path`) and leaves it for
    // the switch.
    void take(const stdfs::path& source, const stdfs::path& path, mode_t mode, const Entry& entry,
              const std::string& object = "") {
        if (m_sources.relocation != nullptr && m_sources.relocation->links_sources(entry.path)) {
            stdfs::path temporary = temporary_path_for(path, entry.id);
            Fs::instance().link_or_copy(source, temporary, mode);
            Fs::instance().rename(temporary, path);
            m_linked.push_back({entry.path, source, object});
        } else {
            Fs::instance().move(source, path, mode);
        }
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
    std::vector<std::string> m_returned;
    std::vector<std::string> m_returned_pending;
    std::set<std::string> m_unrestored;
    std::optional<FsError> m_io_error;
    std::map<std::string, PlacedInode> m_placed;
    std::vector<LinkedSource> m_linked;
    bool m_switched = false;
    ContentHashes m_hashes;
};

stdfs::path temporary_path_for(const stdfs::path& path, std::int64_t entry_id) {
    return path.parent_path() / (".venvtx-tmp-" + std::to_string(entry_id) + "-" + path.filename().string());
}

std::set<std::string> objects_needed(const std::vector<Entry>& entries, Side side) {
    std::set<std::string> needed;
    for (const auto& entry : entries) {
        const NodeState& target = target_of(entry, side);
        if (target.type == NodeType::file && !target.object.empty()) {
            needed.insert(target.object);
        }
    }
    return needed;
}

void verify_needed_objects(const ObjectStore& objects, const std::vector<Entry>& entries, Side side,
                           const MaterializeSources& sources) {
    std::set<std::string> checked;
    Progress::Phase phase("checking stored objects", entries.size(), "paths");
    for (const auto& entry : entries) {
        Progress::advance(1);
        const NodeState& target = target_of(entry, side);
        bool layered = !sources.layer.empty() && observe_node(sources.layer / entry.path).type == NodeType::file;
        bool pending = target.object.empty() && sources.pending.count(entry.path) != 0; // checked by key
        if (target.type != NodeType::file || layered || pending || sources.trusted.count(target.object) != 0 ||
            !checked.insert(target.object).second) {
            continue;
        }
        if (target.object.empty()) { // e.g. a removal whose rollback renamed its files back, redone by hand
            throw Error(ExitCode::verify_failed, "no stored content for " + entry.path + ": nothing was changed");
        }
        try {
            objects.verify(target.object);
        } catch (const Error& error) {
            throw Error(error.code(), std::string(error.what()) + "; needed for " + entry.path +
                                          ": nothing was changed");
        }
    }
}

MaterializeResult materialize(const VenvLayout& layout, ObjectStore& objects, std::vector<Entry>& entries,
                              Side side, const MaterializeSources& sources) {
    return Materializer(layout, objects, entries, side, sources).run();
}

ShadowMaterialize::ShadowMaterialize(const VenvLayout& layout, ObjectStore& objects, std::vector<Entry>& entries,
                                     Side side, const MaterializeSources& sources)
    : m_materializer(std::make_unique<Materializer>(layout, objects, entries, side, sources)) {}

ShadowMaterialize::~ShadowMaterialize() = default;

void ShadowMaterialize::place() {
    m_materializer->place();
}

std::vector<std::string> ShadowMaterialize::unplaced() const {
    return m_materializer->unplaced();
}

MaterializeResult ShadowMaterialize::check_switched(const std::vector<std::string>& unit_roots) {
    m_materializer->switched(unit_roots);
    return m_materializer->check();
}

} // namespace venvtx
