// Pending captures (migration 0009): files a removal renamed into staging without hashing them.
// Each waits in staging/<tx>/<entry id>, its entry's before_object still NULL, and is trusted
// without being read while its inode key is the one recorded when it arrived there; otherwise
// only while its bytes hash to its content hash (RECORD's, where RECORD lists the file). Hashing 1 GB costs a
// second that `pip uninstall` never pays; a rollback renames such a file back (key checked) and
// never needs the hash, so the hash waits for whoever needs an object: `gc`, or a rollback
// that must copy (see capture/settle.hpp).
#pragma once

#include "venvtx/core/inode_key.hpp"
#include "venvtx/store/database.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace venvtx {

struct PendingCapture {
    std::int64_t entry_id = 0;
    std::string path;  // venv-relative
    InodeKey key;      // the staged file's, when it was staged (or renamed back there)
    std::string content_hash;  // "sha256=<urlsafe base64>" its bytes must hash to (see 0009)
};

// A pending capture with the staged file that holds it.
struct PendingSource {
    std::filesystem::path staged;
    PendingCapture row;  // its entry in the removal, inode key and RECORD hash
};

// Adds rows, inside the caller's SQL transaction (History::save_entries).
void insert_pending(Database& db, const std::vector<PendingCapture>& pending);
std::vector<PendingCapture> pending_of(Database& db, std::int64_t tx);
void rekey_pending(Database& db, std::int64_t entry_id, const InodeKey& key);
// A changed capture taken as it is now (`rollback --force`): its key and content hash become the
// staged file's.
void retake_pending(Database& db, std::int64_t entry_id, const InodeKey& key, const std::string& content_hash);
// Drops `tx`'s rows: its files went back into the venv, or were hashed into objects.
void forget_pending(Database& db, std::int64_t tx);
std::vector<std::int64_t> transactions_with_pending(Database& db);
// Bytes and files still pending (pruned transactions have none).
struct PendingTotals {
    std::uint64_t bytes = 0;
    std::int64_t files = 0;
};
PendingTotals pending_totals(Database& db);

} // namespace venvtx
