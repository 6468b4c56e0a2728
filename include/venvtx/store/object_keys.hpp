// The inode each loose object had when it was stored (migration 0008): a restore reads an
// object again only when its inode changed since, or was never recorded. `venvtx verify`
// always re-hashes.
#pragma once

#include "venvtx/store/store.hpp"

#include <set>
#include <string>
#include <vector>

namespace venvtx {

// Records the current inode of each of these loose objects (just stored, hashed on the way).
void record_object_keys(Store& store, const std::vector<std::string>& hexes);

// Those of `hexes` whose loose file is the very inode recorded when it was stored, unchanged.
std::set<std::string> unchanged_objects(Store& store, const std::set<std::string>& hexes);

} // namespace venvtx
