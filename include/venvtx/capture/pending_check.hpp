// Checking a removal's pending captures (store/pending_captures.hpp) before anything relies on
// them: each staged file is taken unread while its inode key is the recorded one, and otherwise
// (a copied store, a chmod -R, a rename back into staging) only when its bytes hash to its
// content hash. What passes on another key gets that key recorded, so a later step that knows
// the file by its inode (a restore that renames it back) still knows it.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/store/store.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace venvtx {

// `tx`'s pending captures by venv path, each with its staged file.
std::map<std::string, PendingSource> pending_sources_of(Store& store, std::int64_t tx);

// A staged file still there, read whole on `key`, whose bytes are not its content hash's.
struct ChangedCapture {
    InodeKey key;
    FileDigest digest;
};

struct PendingCheck {
    std::vector<std::string> unintact;          // venv paths: gone, or other bytes
    std::map<std::string, ChangedCapture> changed;  // of the unintact: those still there
    std::map<std::string, FileDigest> digests;  // of the intact ones that were read
    std::map<std::string, InodeKey> rekeyed;    // intact by content on another key: that key
};

// Every source against its row, all reading in parallel. `read_all`: the unchanged ones are
// read too (their digests wanted), their keys compared again afterwards.
PendingCheck check_pending(const std::map<std::string, PendingSource>& sources, bool read_all = false);

// Records each of `keys` (venv path -> the staged file's key now) in the index and in `sources`.
void rekey_pending(Store& store, std::map<std::string, PendingSource>& sources,
                   const std::map<std::string, InodeKey>& keys);
// Takes the changed ones of `checked` as they are now (`rollback --force`), recorded like
// rekey_pending, and says so.
void retake_changed(const Output& out, Store& store, std::map<std::string, PendingSource>& sources,
                    const PendingCheck& checked);

// After a restore renamed pending files back into staging (`paths`): their new keys (a rename
// moves ctime), recorded where size and mtime are still the recorded ones.
void rekey_returned(Store& store, std::map<std::string, PendingSource>& sources, const std::vector<std::string>& paths);

// After a removal's own restore: the rows of the files that went back into the venv go; those
// of `unrestored` paths stay while their files wait in staging.
void forget_restored(Store& store, const std::map<std::string, PendingSource>& own,
                     const std::vector<std::string>& unrestored);

} // namespace venvtx
