// Zero-copy capture: every path a transaction will replace or remove is renamed into the
// store's staging area (the bytes never move), then hashed in parallel and adopted as objects,
// or (a removal) left there unhashed as pending captures.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/store/object_store.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

namespace venvtx {

struct CaptureResult {
    std::vector<std::pair<std::string, std::uint64_t>> new_objects;  // hex, size
    std::vector<PendingCapture> pending;  // files left in staging unhashed (CaptureHashing::deferred)
};

// A removal defers hashing: its files wait in staging as pending captures (see
// store/pending_captures.hpp) and its own restore, or a rollback, renames them back.
enum class CaptureHashing { now, deferred };

// For each entry whose before-state is a file or symlink that the transaction changes: rename
// it into staging; then remove directories that must go (deepest first); then hash the staged
// files in parallel. Fills Entry::before.object and lists the objects the index lacks (a file
// under objects/ the index does not list is garbage: adopting replaces it); deferred, lists
// each staged file's inode key instead. Throws on failure, leaving every moved file in staging,
// where a restore finds it.
// `record_hashes` (venv path -> RECORD's "sha256=..."): the content hash a deferred capture
// records for a file without reading it; any other file it captures is hashed.
CaptureResult capture_by_rename(const VenvLayout& layout, ObjectStore& objects, History& history, std::int64_t tx,
                                std::vector<Entry>& entries, CaptureHashing hashing,
                                const std::unordered_map<std::string, std::string>& record_hashes);

// Moves captured files from staging to their object names. Called once their hashes are in the
// index, so a crash at any point leaves each file findable (staging, or object by hash).
std::vector<std::string> adopt_captured(ObjectStore& objects, std::int64_t tx, const std::vector<Entry>& entries);

} // namespace venvtx
