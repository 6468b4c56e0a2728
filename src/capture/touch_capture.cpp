// Touch capture: each venv path journaled, and its pre-image kept, just before the watched
// command first changes it.
#include "venvtx/capture/command_capture.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/mutation_trap.hpp"
#include "venvtx/core/sha256.hpp"

#include <cerrno>
#include <map>
#include <set>
#include <utility>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

struct Touched {
    Entry entry;
    InodeFacts inode;
    bool copied = false;  // the pre-image is a copy (the file was about to be written in place)
};

stdfs::path real_or_same(const stdfs::path& path) {
    std::error_code error;
    stdfs::path real = stdfs::canonical(path, error);
    return error ? path : real;
}

// How a refused call's reason begins: the verdict then says the command was refused, not that a
// pre-image could not be kept.
constexpr const char* k_refused = "refused: ";

class TouchCapture : public CommandCapture {
public:
    TouchCapture(const CaptureTarget& target, History& history)
        : m_target(target), m_history(history), m_root(real_or_same(target.layout.root)),
          m_store(real_or_same(target.store_root)) {}

    void prepare(SubprocessSpec& spec) override {
        Fs::instance().mkdirs(m_target.staging);
        spec.trap = &m_trap;
        spec.on_change = [this](const std::vector<PendingChange>& changes) { on_change(changes); };
    }

    CommandDiff diff() override {
        m_history.sync_each_commit(true);
        if (m_trap.failure()) {
            const std::string& why = *m_trap.failure();
            if (why.rfind(k_refused, 0) == 0) {
                throw Error(ExitCode::usage, why); // the command did what a transaction may not
            }
            throw Error(ExitCode::internal, "could not keep a pre-image: " + why);
        }
        CommandDiff diff;
        std::set<std::string> added_paths;
        for (auto& [path, touched] : m_touched) {
            Entry entry = touched.entry;
            struct stat st {};
            stdfs::path full = m_target.layout.root / path;
            NodeState now = ::lstat(full.c_str(), &st) == 0 ? node_from_stat(full, st) : NodeState{};
            bool kept_inode = now.type != NodeType::absent && touched.inode.inode == st.st_ino &&
                              touched.inode.device == st.st_dev;
            bool has_inode = entry.before.type == NodeType::file || entry.before.type == NodeType::dir;
            if (same_node_state(entry.before, now) && (!has_inode || kept_inode) && same_content(touched, full)) {
                diff.unchanged.push_back(entry.id);
                continue;
            }
            entry.after = now;
            entry.progress = entry.before.type == NodeType::file ? EntryProgress::captured : EntryProgress::applied;
            diff.changed.push_back(entry);
            bool replaced_dir = entry.before.type == NodeType::dir && now.type == NodeType::dir && !kept_inode;
            if ((entry.before.type == NodeType::absent || replaced_dir) && now.type == NodeType::dir) {
                add_tree(path, diff.added, added_paths); // renamed into place whole: its contents are new too
            }
        }
        return diff;
    }

    std::string describe() const override {
        return std::to_string(m_trap.served()) + " calls watched, " + std::to_string(m_touched.size()) +
               " venv paths touched, " + std::to_string(m_kept) + " pre-images kept";
    }

private:
    // A file opened for writing keeps a copy as its pre-image: a rewrite that kept its size and
    // mtime is still a change, so the bytes decide.
    bool same_content(const Touched& touched, const stdfs::path& full) const {
        if (!touched.copied || touched.entry.before.type != NodeType::file) {
            return true;
        }
        stdfs::path staged = m_target.staging / std::to_string(touched.entry.id);
        return sha256_file(staged).hex == sha256_file(full).hex;
    }

    // Once a pre-image could not be kept, the transaction will be undone: the venv must not
    // change any further (the command's other files, its temporaries, are its own business).
    void on_change(const std::vector<PendingChange>& changes) {
        try {
            capture(changes);
        } catch (const std::exception&) {
            m_failed = true;
            throw;
        }
    }

    void capture(const std::vector<PendingChange>& changes) {
        std::vector<Touched> fresh;
        for (std::size_t i = 0; i < changes.size(); ++i) {
            const PendingChange& change = changes[i];
            refuse_history_changes(change.path);
            if (change.kind == ChangeKind::write) {
                copy_before_write(change.path); // wherever it is now: moved out of the venv too
            }
            auto rel = venv_relative(change.path);
            if (change.kind == ChangeKind::second_name) {
                refuse_outside_name(rel, i + 1 < changes.size() ? changes[i + 1].path : stdfs::path());
                continue;
            }
            if (change.kind == ChangeKind::special && rel) {
                throw RefusedChange(k_refused + std::string("the command tried to make a device, fifo or whiteout node in the venv: ") + *rel);
            }
            if (change.kind == ChangeKind::mount) {
                if (rel || change.path == m_root) {
                    throw RefusedChange(k_refused + std::string("the command tried to mount, unmount or chroot onto the venv: ") +
                                        change.path.string());
                }
                continue;
            }
            if (!rel) {
                continue;
            }
            if (m_failed) {
                throw Error(ExitCode::internal, "refused after an earlier failure: " + *rel);
            }
            // A file renamed (or exchanged) out of the venv stays reachable there: its pre-image
            // must be a copy.
            bool leaves_venv = change.kind == ChangeKind::move_tree && !change.moves_to.empty() &&
                               !venv_relative(change.moves_to);
            if (m_touched.count(*rel) == 0 && !below_new_directory(*rel)) {
                observe(*rel, change.kind, leaves_venv, fresh);
            }
        }
        if (fresh.empty()) {
            return;
        }
        std::vector<Entry> entries;
        bool pre_images = false;
        for (const auto& touched : fresh) {
            entries.push_back(touched.entry);
            pre_images = pre_images || touched.entry.before.type != NodeType::absent;
        }
        // A path that existed is journaled durably before its pre-image is taken; a new path
        // (most of what an installer writes) is only written: the end of the command flushes it.
        m_history.sync_each_commit(pre_images);
        m_history.add_entries(m_target.tx, entries);
        for (size_t i = 0; i < fresh.size(); ++i) {
            fresh[i].entry.id = entries[i].id;
            keep_pre_image(m_touched.emplace(fresh[i].entry.path, fresh[i]).first->second);
        }
    }

    // The store and the venv root itself: a command that would delete the history (`rm -rf
    // .venvtx`, `python -m venv --clear`) or move the venv away is refused. (.lock stays open to
    // the uv that venvtx runs, which locks it.)
    void refuse_history_changes(const stdfs::path& path) const {
        std::string text = path.string();
        std::string store = m_store.string();
        if (text == m_root.string() || text == store ||
            text.compare(0, store.size() + 1, store + "/") == 0) {
            throw RefusedChange(k_refused + std::string("the command tried to change ") + text +
                                ", which holds the venv's history or is the venv itself");
        }
    }

    // A hard link outside the venv to a venv file would let anything change it unseen.
    void refuse_outside_name(const std::optional<std::string>& source, const stdfs::path& new_name) const {
        if (source && !new_name.empty() && !venv_relative(new_name)) {
            throw RefusedChange(k_refused + std::string("the command tried to give the venv file ") + *source +
                                " a second name outside the venv (" + new_name.string() + ")");
        }
    }

    // The venv-relative path, or nothing for a path outside the venv, in the store, or .lock.
    std::optional<std::string> venv_relative(const stdfs::path& path) const {
        std::string text = path.string();
        std::string root = m_root.string() + "/";
        std::string store = m_store.string();
        if (text.compare(0, root.size(), root) != 0 || text == store ||
            text.compare(0, store.size() + 1, store + "/") == 0) {
            return std::nullopt;
        }
        std::string rel = text.substr(root.size());
        return rel == ".lock" ? std::nullopt : std::optional(rel);
    }

    // Below a directory the command created: new as well, found when that directory is diffed.
    bool below_new_directory(const std::string& rel) const {
        for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
            auto found = m_touched.find(rel.substr(0, slash));
            if (found != m_touched.end() && found->second.entry.before.type == NodeType::absent) {
                return true;
            }
        }
        return false;
    }

    void observe(const std::string& rel, ChangeKind kind, bool leaves_venv, std::vector<Touched>& fresh) {
        for (const auto& pending : fresh) {
            if (pending.entry.path == rel) {
                return;
            }
        }
        stdfs::path full = m_target.layout.root / rel;
        struct stat st {};
        Touched touched;
        touched.entry.path = rel;
        touched.entry.progress = EntryProgress::touched;
        if (::lstat(full.c_str(), &st) == 0) {
            touched.entry.before = node_from_stat(full, st);
            touched.inode = {st.st_dev, st.st_ino};
            touched.copied = (kind == ChangeKind::write || leaves_venv) && S_ISREG(st.st_mode);
        } else if (errno != ENOENT && errno != ENOTDIR) {
            throw system_error("stat " + full.string(), errno);
        }
        touched.entry.after = touched.entry.before;
        fresh.push_back(touched);
        if (kind == ChangeKind::move_tree && S_ISDIR(st.st_mode) && touched.entry.before.type == NodeType::dir) {
            VenvSnapshot below = snapshot_below(m_target.layout, rel, m_target.store_root);
            for (const auto& [path, state] : below.states) {
                if (m_touched.count(path) == 0) {
                    Touched child;
                    child.entry.path = path;
                    child.entry.progress = EntryProgress::touched;
                    child.entry.before = state;
                    child.entry.after = state;
                    auto inode = below.inodes.find(path);
                    if (inode != below.inodes.end()) {
                        child.inode = inode->second;
                    }
                    child.copied = leaves_venv && state.type == NodeType::file;
                    fresh.push_back(child);
                }
            }
        }
    }

    void keep_pre_image(Touched& touched) {
        if (touched.entry.before.type != NodeType::file) {
            return;
        }
        stdfs::path full = m_target.layout.root / touched.entry.path;
        stdfs::path staged = m_target.staging / std::to_string(touched.entry.id);
        if (touched.copied) {
            Fs::instance().copy_whole(full, staged, touched.entry.before.mode);
        } else {
            Fs::instance().link_or_copy(full, staged, touched.entry.before.mode);
            m_linked[{touched.inode.device, touched.inode.inode}] = &touched;
        }
        ++m_kept;
    }

    // A file about to be written in place whose inode a staged link shares (it was linked for
    // a chmod, or renamed away whole and is now written under its new name): a copy replaces
    // the link while the bytes are still the old ones.
    void copy_before_write(const stdfs::path& path) {
        struct stat st {};
        if (m_linked.empty() || ::lstat(path.c_str(), &st) != 0) {
            return;
        }
        auto found = m_linked.find({st.st_dev, st.st_ino});
        if (found == m_linked.end()) {
            return;
        }
        Touched& touched = *found->second;
        stdfs::path staged = m_target.staging / std::to_string(touched.entry.id);
        stdfs::path copy = m_target.staging / (std::to_string(touched.entry.id) + ".copy");
        Fs::instance().copy_file(path, copy, touched.entry.before.mode);
        Fs::instance().rename(copy, staged);
        touched.copied = true;
        m_linked.erase(found);
    }

    // Nested new trees (a new sub/ inside a replaced pkg/) are walked twice: each path is
    // journaled once.
    void add_tree(const std::string& rel, std::vector<Entry>& added, std::set<std::string>& seen) const {
        for (const auto& [path, state] : snapshot_below(m_target.layout, rel, m_target.store_root).states) {
            if (m_touched.count(path) == 0 && seen.insert(path).second) {
                Entry entry;
                entry.path = path;
                entry.after = state;
                entry.progress = EntryProgress::applied;
                added.push_back(entry);
            }
        }
    }

    CaptureTarget m_target;
    History& m_history;
    stdfs::path m_root;
    stdfs::path m_store;
    MutationTrap m_trap;
    std::map<std::string, Touched> m_touched;  // node-based: pointers to its values stay valid
    std::map<std::pair<dev_t, ino_t>, Touched*> m_linked;  // inodes a staged link shares
    std::size_t m_kept = 0;
    bool m_failed = false;
};

} // namespace

// A watched command interrupted: paths below a directory it created (or renamed into place)
// were never journaled one by one; they are new, so they go too.
std::vector<std::string> touch_capture_recovery(const VenvLayout& layout, const stdfs::path& store_root,
                                                std::vector<Entry>& entries) {
    std::set<std::string> known;
    for (const auto& entry : entries) {
        known.insert(entry.path);
    }
    std::vector<Entry> below;
    for (auto& entry : entries) {
        if (entry.progress != EntryProgress::touched || entry.before.type != NodeType::absent) {
            continue;
        }
        entry.after = observe_node(layout.root / entry.path); // a directory now: removed deepest first
        if (entry.after.type != NodeType::dir) {
            continue;
        }
        for (const auto& [path, state] : snapshot_below(layout, entry.path, store_root).states) {
            if (known.insert(path).second) {
                Entry added;
                added.path = path;
                added.after = state;
                below.push_back(added);
            }
        }
    }
    entries.insert(entries.end(), below.begin(), below.end());
    return {}; // every path the command changed was journaled before it changed it
}

std::unique_ptr<CommandCapture> make_touch_capture(const CaptureTarget& target, History& history) {
    return std::make_unique<TouchCapture>(target, history);
}

} // namespace venvtx
