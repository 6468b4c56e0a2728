// The store's packs (store/pack_file.hpp, migration 0006): objects moved out of objects/ into
// compressed packs under <store>/packs/, indexed object -> pack, member order. Reading is
// transparent to restores: the objects a restore needs are unpacked first, each pack streamed
// once in member order, every member hashed before it lands as a loose object.
#pragma once

#include "venvtx/store/store.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct PackInfo {
    std::int64_t id = 0;
    std::string file;        // under <store>/packs/
    std::uint64_t bytes = 0; // the pack file's size
    std::int64_t members = 0;
};

std::filesystem::path packs_dir(const Store& store);

// Writes one pack of these loose objects, in this order, and indexes it (the loose files stay:
// delete_loose_copies removes them). `label` goes into the file name. Throws on a write failure
// with nothing indexed and the partial file removed.
PackInfo write_pack(Store& store, const std::vector<std::string>& hexes, const std::string& label);

// The packs in the index, oldest first.
std::vector<PackInfo> list_packs(Store& store);
// Of `hexes`, the packed ones and their pack ids.
std::map<std::string, std::int64_t> packed_objects(Store& store, const std::set<std::string>& hexes);
// Every packed object.
std::set<std::string> all_packed(Store& store);

// Makes each of `hexes` that is packed and not loose a loose object again: each pack read once,
// in member order, each member hashed before it is placed. `strict` (before a rollback touches
// the venv): a member whose bytes are not its name's, a member the pack lacks or an unreadable
// pack is an Error (exit 6) naming it. `tolerant` (a restore, recover): such an object is just
// not placed (the restore then names its paths) and the other packs are still read. Returns the
// objects it unpacked.
enum class PackReading { strict, tolerant };
std::set<std::string> unpack_objects(Store& store, const std::set<std::string>& hexes, PackReading mode);

// Deletes the loose files of packed objects in `hexes` (the pack holds their bytes); returns
// the bytes freed.
std::uint64_t delete_loose_copies(Store& store, const std::set<std::string>& hexes);

// Packs none of whose members an indexed object needs any more: rows dropped, then files
// deleted; and pack files the index does not list (a killed gc's). Returns the bytes freed.
std::uint64_t delete_dead_packs(Store& store);

// Deletes what a killed unpack left in <store>/unpacking/.
void remove_unpack_leftovers(Store& store);

// Streams packs and hashes their members against their names and the index: for each problem,
// (what, where, detail). `sample_percent` < 100 checks that share of the packs, at random.
struct PackProblem {
    std::string what;
    std::string where;
    std::string detail;
};
struct PackCheck {
    std::int64_t members_checked = 0;
    std::vector<PackProblem> problems;
};
PackCheck verify_packs(Store& store, double sample_percent);

} // namespace venvtx
