// Link capture: every venv file hard-linked into staging before the command, the venv
// snapshotted again after it, paths diffed by state and inode.
#include "venvtx/capture/command_capture.hpp"
#include "venvtx/capture/private_copy.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"

#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

constexpr std::uint64_t k_copy_limit = 1 << 20;  // --copy copies files up to this size

bool same_inode(const InodeFacts& a, const InodeFacts& b) { return a.inode == b.inode && a.device == b.device; }

class LinkCapture : public CommandCapture {
public:
    LinkCapture(const CaptureTarget& target, const std::vector<Entry>& entries,
                std::map<std::string, InodeFacts> inodes, bool copy_small_files)
        : m_target(target), m_entries(entries), m_inodes(std::move(inodes)), m_copy_small_files(copy_small_files) {}

    void prepare(SubprocessSpec&) override {
        Fs& fs = Fs::instance();
        fs.mkdirs(m_target.staging);
        for (const auto& entry : m_entries) {
            m_snapshot_paths.insert(entry.path);
            if (entry.before.type != NodeType::file) {
                continue;
            }
            stdfs::path path = m_target.layout.root / entry.path;
            stdfs::path staged = m_target.staging / std::to_string(entry.id);
            if (m_copy_small_files && entry.before.size <= k_copy_limit) {
                fs.copy_whole(path, staged, entry.before.mode);
                m_copied.insert(entry.path);
            } else {
                fs.link_or_copy(path, staged, entry.before.mode);
            }
        }
        fs.sync_filesystem(m_target.staging);
    }

    CommandDiff diff() override {
        VenvSnapshot after = snapshot_venv(m_target.layout, m_target.store_root);
        CommandDiff diff;
        for (const auto& journaled : m_entries) {
            Entry entry = journaled;
            auto now = after.states.find(entry.path);
            NodeState now_state = now == after.states.end() ? NodeState{} : now->second;
            bool kept_inode = entry.before.type == NodeType::file && now_state.type == NodeType::file &&
                              same_inode(m_inodes.at(entry.path), after.inodes.at(entry.path));
            if (same_node_state(entry.before, now_state) && (entry.before.type != NodeType::file || kept_inode)) {
                diff.unchanged.push_back(entry.id);
                continue;
            }
            if (kept_inode && m_copied.count(entry.path) == 0) {
                diff.in_place.push_back(entry.path);
                diff.unchanged.push_back(entry.id); // no pre-image: never restored from a wrong one
                continue;
            }
            if (entry.before.type == NodeType::file && m_copied.count(entry.path) == 0) {
                keep_if_named_elsewhere(entry);
            }
            entry.after = now_state;
            entry.progress = entry.before.type == NodeType::file ? EntryProgress::captured : EntryProgress::applied;
            diff.changed.push_back(entry);
        }
        for (const auto& [path, state] : after.states) {
            if (m_snapshot_paths.count(path) == 0) {
                Entry entry;
                entry.path = path;
                entry.after = state;
                entry.progress = EntryProgress::applied;
                diff.added.push_back(entry);
            }
        }
        return diff;
    }

    std::string describe() const override {
        return "linked " + std::to_string(m_inodes.size()) + " files";
    }

private:
    // The venv's name for the linked inode is gone. Where the inode gained a name meanwhile
    // (moved out of the venv, exchanged with an outside file, linked out), the command or anyone
    // after it may write through that name: the pre-image becomes a copy of its own.
    void keep_if_named_elsewhere(const Entry& entry) const {
        stdfs::path staged = m_target.staging / std::to_string(entry.id);
        struct stat st {};
        if (Confinement::instance().stat_node(staged, st) && st.st_nlink > m_inodes.at(entry.path).links) {
            keep_private(staged, entry.before.mode);
        }
    }

    CaptureTarget m_target;
    const std::vector<Entry>& m_entries;
    std::map<std::string, InodeFacts> m_inodes;
    bool m_copy_small_files;
    std::set<std::string> m_snapshot_paths;
    std::set<std::string> m_copied;
};

} // namespace

// A linked command interrupted before its changes were diffed: the journal holds the whole
// snapshot, and anything not in it may be the command's — or a concurrent pip's, or the user's.
// Nothing attributes it to the transaction, so it stays where it is and the verdict names it.
std::vector<std::string> link_capture_recovery(const VenvLayout& layout, const stdfs::path& store_root,
                                               const std::vector<Entry>& entries) {
    std::set<std::string> known;
    for (const auto& entry : entries) {
        known.insert(entry.path);
    }
    std::vector<std::string> unknown;  // the topmost of each new tree
    std::set<std::string> seen;
    for (const auto& [path, state] : snapshot_venv(layout, store_root).states) {
        if (known.count(path) != 0) {
            continue;
        }
        bool below_another = false;
        for (stdfs::path up = stdfs::path(path).parent_path(); !up.empty() && !below_another; up = up.parent_path()) {
            below_another = seen.count(up.string()) != 0;
        }
        seen.insert(path);
        if (!below_another) {
            unknown.push_back(path);
        }
    }
    return unknown;
}

std::unique_ptr<CommandCapture> make_link_capture(const CaptureTarget& target, const std::vector<Entry>& entries,
                                                  std::map<std::string, InodeFacts> inodes, bool copy_small_files) {
    return std::make_unique<LinkCapture>(target, entries, std::move(inodes), copy_small_files);
}

} // namespace venvtx
