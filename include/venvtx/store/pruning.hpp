// What `gc` reads and changes in the index: which objects the unpruned history still needs,
// and pruning a prefix of the history.
#pragma once

#include "venvtx/store/database.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace venvtx {

struct ObjectUse {
    std::string hex;
    std::uint64_t size = 0;
    std::int64_t newest_tx = 0;  // the newest unpruned transaction whose before-state it is (0: none)
};

std::vector<ObjectUse> object_uses(Database& db);
// The pending captures as the objects hashing would make of them: `hex` holds RECORD's form of
// the content hash ("sha256=..."), `newest_tx` the removal that staged them (`gc --dry-run`).
std::vector<ObjectUse> pending_uses(Database& db);

struct TransactionAge {
    std::int64_t id = 0;
    bool pruned = false;
    bool finished = false;
    bool counted = false;  // it changed the venv (committed, or undone since): what --keep N counts
    std::int64_t age_s = 0;
};

// Every transaction, oldest first.
std::vector<TransactionAge> transaction_ages(Database& db);

struct StoreTotals {
    std::uint64_t bytes = 0;
    std::int64_t objects = 0;
};

StoreTotals store_totals(Database& db);

// Marks every finished transaction with id <= `last` pruned (remembering its state) and drops
// the rows of the objects no unpruned transaction refers to, in one SQL transaction; returns
// those objects, also listed as doomed: the caller deletes their files once this has committed,
// then forgets them (a crash in between: `delete_doomed_objects` at the next mutating command).
std::vector<std::string> prune_through(Database& db, std::int64_t last);

// Objects dropped by a gc whose files may still be there (not stored again since).
std::vector<std::string> doomed_objects(Database& db);
// Once their files are deleted.
void forget_doomed(Database& db);

} // namespace venvtx
