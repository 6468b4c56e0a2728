// capture/ holds how a change's pre-images are kept (by rename, touch or link) and settled.
//
// Zero-copy capture: every path a transaction will replace or remove is renamed into the
// store's staging area (the bytes never move), then hashed in parallel and adopted as objects,
// or (a removal) left there unhashed as pending captures.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/store/object_store.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/venv/layout.hpp"
#include "venvtx/venv/switch_units.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
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

// What a deferred capture knows of a removal's files without reading them.
struct CaptureHints {
    // venv path -> RECORD's "sha256=...": the content hash recorded for a file without reading
    // it; any other file it captures is hashed.
    std::unordered_map<std::string, std::string> record_hashes;
    // venv paths of files whose distribution uv installed (INSTALLER says "uv"). uv hard-links
    // them from its cache and never writes a cache entry in place, so such a file is kept by
    // rename although it has a second name; a write through that name still moves its inode key,
    // and a rollback then refuses it by name (see capture/pending_check.hpp). Anywhere else a
    // file with a second name is copied: venvtx cannot know what writes through it.
    std::unordered_set<std::string> uv_linked;
};

// For each entry whose before-state is a file or symlink that the transaction changes: rename
// it into staging; then remove directories that must go (deepest first); then hash the staged
// files in parallel. Fills Entry::before.object and lists the objects the index lacks (a file
// under objects/ the index does not list is garbage: adopting replaces it); deferred, lists
// each staged file's inode key instead. Throws on failure, leaving every moved file in staging,
// where a restore finds it. With `relocation` (a switched change), a relocated path is taken
// from its unit's old version below the shadow, and directories are left to the switch (its
// cleanup, then materialize).
CaptureResult capture_by_rename(const VenvLayout& layout, ObjectStore& objects, History& history, std::int64_t tx,
                                std::vector<Entry>& entries, CaptureHashing hashing, const CaptureHints& hints,
                                const Relocation& relocation = Relocation());

// Moves captured files from staging to their object names. Called once their hashes are in the
// index, so a crash at any point leaves each file findable (staging, or object by hash).
std::vector<std::string> adopt_captured(ObjectStore& objects, std::int64_t tx, const std::vector<Entry>& entries);

} // namespace venvtx
