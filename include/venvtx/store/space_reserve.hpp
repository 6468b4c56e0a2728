// Room kept for recovery: <store>/reserve, a file of k_reserve_bytes allocated while there is
// room. When the store's filesystem fills during a change, the restore gives the reserve back
// first, so the index can still record the restore and `recover` is never wedged by the very
// lack of space it has to clean up after.
#pragma once

#include <cstdint>
#include <filesystem>

namespace venvtx {

constexpr std::uint64_t k_reserve_bytes = 4u << 20;

// Allocates the reserve where it is missing; never fails (a full disk is the reason it exists).
void keep_reserve(const std::filesystem::path& store_root);
// Deletes the reserve, if any; never fails.
void release_reserve(const std::filesystem::path& store_root);

} // namespace venvtx
