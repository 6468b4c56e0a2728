// capture_by_rename: move, hash in parallel (or leave pending), adopt.
#include "venvtx/capture/capture.hpp"

#include "venvtx/capture/private_copy.hpp"
#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/inode_key.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/entry_order.hpp"
#include "venvtx/store/holds.hpp"

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

// A pending capture RECORD gives no hash for (bytecode, RECORD itself, a file whose size is not
// RECORD's) is hashed now, in parallel: every pending file can then be checked by its content
// once its inode key no longer matches. These are few and small beside a wheel's listed files.
void hash_unlisted(const stdfs::path& staging, std::vector<PendingCapture>& pending) {
    std::vector<PendingCapture*> unlisted;
    std::vector<stdfs::path> paths;
    for (auto& row : pending) {
        if (row.content_hash.empty()) {
            unlisted.push_back(&row);
            paths.push_back(staging / std::to_string(row.entry_id));
        }
    }
    std::vector<FileDigest> digests = sha256_files(paths);
    for (std::size_t i = 0; i < unlisted.size(); ++i) {
        unlisted[i]->content_hash = record_hash_from_hex(digests[i].hex);
    }
}

// Files hashed as staged: one whose only other name is its hold (holds/<its hash>, the same
// inode) stays as it is; any other with a second name is copied, and the copy hashed.
void keep_hashed_private(const ObjectStore& objects, const std::vector<Entry*>& staged,
                         const std::vector<stdfs::path>& paths, std::vector<FileDigest>& digests) {
    std::vector<std::size_t> copied;
    for (std::size_t i = 0; i < staged.size(); ++i) {
        if (keep_private(paths[i], staged[i]->before.mode, false,
                         hold_path(objects.root(), record_hash_from_hex(digests[i].hex))).copied) {
            copied.push_back(i);
        }
    }
    std::vector<stdfs::path> copies;
    for (std::size_t i : copied) {
        copies.push_back(paths[i]);
    }
    std::vector<FileDigest> rehashed = sha256_files(copies);
    for (std::size_t k = 0; k < copied.size(); ++k) {
        digests[copied[k]] = rehashed[k];
    }
}

} // namespace

CaptureResult capture_by_rename(const VenvLayout& layout, ObjectStore& objects, History& history, std::int64_t tx,
                                std::vector<Entry>& entries, CaptureHashing hashing, const CaptureHints& hints,
                                const Relocation& relocation) {
    Fs& fs = Fs::instance();
    stdfs::path staging = objects.staging_dir(tx);
    fs.mkdirs(staging);
    std::vector<Entry*> staged_files;
    std::vector<PendingCapture> pending;
    Progress::Phase phase("capturing", entries.size(), "paths");
    for (auto& entry : entries) {
        Progress::advance(1);
        if (!changes_leaf(entry)) {
            continue;
        }
        try {
            fs.move(relocation.locate(layout.root, entry.path), staging / std::to_string(entry.id), entry.before.mode);
        } catch (const FsError& error) {
            if (error.errno_value() != ENOENT) {
                throw;
            }
            entry.before = NodeState{}; // removed by someone else since the plan: nothing to keep
            continue;
        }
        entry.progress = EntryProgress::captured;
        if (entry.before.type == NodeType::file && hashing == CaptureHashing::deferred) {
            auto listed = hints.record_hashes.find(entry.path);
            stdfs::path hold = listed == hints.record_hashes.end() ? stdfs::path() : hold_path(objects.root(), listed->second);
            InodeKey key = keep_private(staging / std::to_string(entry.id), entry.before.mode,
                                        hints.uv_linked.count(entry.path) > 0, hold).key;
            // RECORD's hash was taken for the planned size: a file that changed since is hashed.
            bool fits = listed != hints.record_hashes.end() && static_cast<std::uint64_t>(key.size) == entry.before.size;
            entry.before.size = static_cast<std::uint64_t>(key.size); // as staged
            entry.before.mtime_ns = key.mtime_ns;
            pending.push_back({entry.id, entry.path, key, fits ? listed->second : std::string()});
        } else if (entry.before.type == NodeType::file) {
            staged_files.push_back(&entry); // kept private once its hash names its hold
        }
    }
    for (Entry* entry : dirs_deepest_first(entries)) {
        if (entry->before.type == NodeType::dir && entry->after.type == NodeType::absent) {
            if (!relocation.active()) { // else the switch clears them, then materialize
                fs.rmdir(layout.root / entry->path);
            }
            entry->progress = EntryProgress::captured;
        }
    }
    std::vector<stdfs::path> paths;
    for (Entry* entry : staged_files) {
        paths.push_back(staging / std::to_string(entry->id));
    }
    std::vector<FileDigest> digests = sha256_files(paths);
    keep_hashed_private(objects, staged_files, paths, digests);
    CaptureResult result;
    hash_unlisted(staging, pending);
    result.pending = std::move(pending);
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
        if (entry.progress == EntryProgress::captured && entry.before.type == NodeType::file &&
            !entry.before.object.empty()) { // a pending capture stays in staging
            objects.adopt(staging / std::to_string(entry.id), entry.before.object);
            adopted.push_back(entry.before.object);
        }
        Progress::advance(1);
    }
    return adopted;
}

} // namespace venvtx
