// capture_by_rename: move, hash in parallel, adopt.
#include "venvtx/txn/capture.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/txn/entry_order.hpp"

#include <algorithm>
#include <set>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// A file is always captured when the transaction touches its path (its content is not hashed
// before the move); a symlink or special node only when it changes (the index holds all of it).
bool changes_leaf(const Entry& entry) {
    if (entry.before.type == NodeType::symlink || entry.before.type == NodeType::special) {
        return entry.after.type != entry.before.type || entry.after.link_target != entry.before.link_target;
    }
    return entry.before.type == NodeType::file;
}

// A file with another name (a hard link from outside the venv) could be changed through that
// name after the capture: the store keeps a copy of its own instead of sharing the inode.
void keep_private(const stdfs::path& staged, mode_t mode) {
    struct stat st {};
    if (!Confinement::instance().stat_node(staged, st) || st.st_nlink <= 1) {
        return;
    }
    stdfs::path copy = staged.string() + ".private";
    Fs::instance().copy_file(staged, copy, mode);
    Fs::instance().rename(copy, staged);
}

} // namespace

CaptureResult capture_by_rename(const VenvLayout& layout, ObjectStore& objects, History& history, std::int64_t tx,
                                std::vector<Entry>& entries) {
    Fs& fs = Fs::instance();
    stdfs::path staging = objects.staging_dir(tx);
    fs.mkdirs(staging);
    std::vector<Entry*> staged_files;
    Progress::Phase phase("capturing", entries.size(), "paths");
    for (auto& entry : entries) {
        Progress::advance(1);
        if (!changes_leaf(entry)) {
            continue;
        }
        try {
            fs.move(layout.root / entry.path, staging / std::to_string(entry.id), entry.before.mode);
        } catch (const FsError& error) {
            if (error.errno_value() != ENOENT) {
                throw;
            }
            entry.before = NodeState{}; // removed by someone else since the plan: nothing to keep
            continue;
        }
        entry.progress = EntryProgress::captured;
        if (entry.before.type == NodeType::file) {
            keep_private(staging / std::to_string(entry.id), entry.before.mode);
            staged_files.push_back(&entry);
        }
    }
    for (Entry* entry : dirs_deepest_first(entries)) {
        if (entry->before.type == NodeType::dir && entry->after.type == NodeType::absent) {
            fs.rmdir(layout.root / entry->path);
            entry->progress = EntryProgress::captured;
        }
    }
    std::vector<stdfs::path> paths;
    for (Entry* entry : staged_files) {
        paths.push_back(staging / std::to_string(entry->id));
    }
    std::vector<FileDigest> digests = sha256_files(paths);
    CaptureResult result;
    std::set<std::string> seen;
    for (size_t i = 0; i < staged_files.size(); ++i) {
        staged_files[i]->before.object = digests[i].hex;
        staged_files[i]->before.size = digests[i].size;
        if (!history.has_object(digests[i].hex) && seen.insert(digests[i].hex).second) {
            result.new_objects.emplace_back(digests[i].hex, digests[i].size);
        }
    }
    for (auto& entry : entries) {
        bool described = entry.before.type == NodeType::symlink || entry.before.type == NodeType::special;
        if (described && entry.progress == EntryProgress::captured) {
            fs.unlink(staging / std::to_string(entry.id)); // the index holds all of it
        }
    }
    return result;
}

std::vector<std::string> adopt_captured(ObjectStore& objects, std::int64_t tx, const std::vector<Entry>& entries) {
    stdfs::path staging = objects.staging_dir(tx);
    Progress::Phase phase("storing captured files", entries.size(), "paths");
    std::vector<std::string> adopted;
    for (const auto& entry : entries) {
        if (entry.progress == EntryProgress::captured && entry.before.type == NodeType::file) {
            objects.adopt(staging / std::to_string(entry.id), entry.before.object);
            adopted.push_back(entry.before.object);
        }
        Progress::advance(1);
    }
    return adopted;
}

} // namespace venvtx
