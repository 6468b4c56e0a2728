// Packing, gc's second half: the objects only older transactions need go from objects/ into
// compressed packs (store/packs.hpp), one pack per transaction (the newest that needs them), so
// that undoing one transaction reads few packs, each once, in order.
#pragma once

#include "venvtx/store/store.hpp"

#include <cstdint>

namespace venvtx {

// The objects of the newest this-many unpruned transactions stay loose (a rollback of them
// renames, with no decompression).
constexpr std::int64_t k_default_loose_last = 5;

struct PackingResult {
    std::int64_t objects = 0;     // packed (dry run: would be)
    std::uint64_t object_bytes = 0;
    std::int64_t packs = 0;       // written
    std::uint64_t pack_bytes = 0; // their size on disk
    std::uint64_t freed_bytes = 0; // loose copies deleted, dead and stray packs removed
};

PackingResult pack_cold_objects(Store& store, std::int64_t loose_last, bool dry_run);

} // namespace venvtx
