// Settling pending captures: hashing the files a removal left unhashed in staging and storing
// them as objects, for whoever needs objects rather than the staged inodes (`gc`, which packs
// and prunes by object; a rollback that must copy: across filesystems, or with a probe on the
// live venv). Crash-safe: the index learns the hashes first, then the files move under their
// object names; finish_settling() completes the moves after a kill.
#pragma once

#include "venvtx/store/store.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

// Hashes `tx`'s pending captures that are intact (see capture/pending_check.hpp) and stores them;
// returns the paths of the others (left pending: never stored under a hash of bytes that may
// not be the captured ones).
std::vector<std::string> settle_pending(Store& store, std::int64_t tx);

// settle_pending() for every transaction after `after` that has pending captures; returns the
// paths it left.
std::vector<std::string> settle_pending_after(Store& store, std::int64_t after);

// The hashes settle_pending_after() would store, read without storing anything (a dry run).
std::set<std::string> pending_digests_after(Store& store, std::int64_t after);

// A staged file of `tx` whose entry already names an object the index lists: a settle killed
// between its index commit and its renames left it there.
struct StagedObject {
    std::int64_t entry_id = 0;
    std::filesystem::path staged;
    std::string hex;
};
std::vector<StagedObject> staged_objects(Store& store, std::int64_t tx);

// The staged objects of finished transactions go under their names, once their hash is checked.
void finish_settling(Store& store);

} // namespace venvtx
