// pack_cold_objects: choose the cold objects, group them by transaction, pack, drop loose copies.
#include "venvtx/upkeep/packing.hpp"

#include "venvtx/core/progress.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/pruning.hpp"

#include <map>
#include <set>
#include <vector>

namespace venvtx {

namespace {

// The newest transaction id whose objects are cold: every unpruned one but the newest
// `loose_last` (0: none is cold).
std::int64_t cold_horizon(Database& db, std::int64_t loose_last) {
    std::vector<std::int64_t> live;
    for (const auto& age : transaction_ages(db)) {
        if (!age.pruned) {
            live.push_back(age.id);
        }
    }
    if (static_cast<std::int64_t>(live.size()) <= loose_last) {
        return 0;
    }
    return live[live.size() - 1 - static_cast<std::size_t>(loose_last)];
}

} // namespace

PackingResult pack_cold_objects(Store& store, std::int64_t loose_last, bool dry_run) {
    PackingResult result;
    std::int64_t horizon = cold_horizon(store.db(), loose_last);
    std::set<std::string> packed = all_packed(store);
    std::map<std::int64_t, std::vector<ObjectUse>> groups;  // by the newest transaction needing them
    std::set<std::string> cold_packed;                       // packed already; a loose copy may linger
    for (const auto& use : object_uses(store.db())) {
        if (use.newest_tx == 0 || use.newest_tx > horizon) {
            continue;
        }
        if (packed.count(use.hex) != 0) {
            cold_packed.insert(use.hex);
        } else if (store.objects().has(use.hex)) {
            groups[use.newest_tx].push_back(use);
        }
    }
    for (const auto& [tx, uses] : groups) {
        result.objects += static_cast<std::int64_t>(uses.size());
        for (const auto& use : uses) {
            result.object_bytes += use.size;
        }
    }
    if (dry_run) {
        return result;
    }
    Progress::Phase phase("packing", static_cast<std::uint64_t>(result.objects), "objects", result.object_bytes);
    for (const auto& [tx, uses] : groups) {
        std::vector<std::string> hexes;
        for (const auto& use : uses) {
            hexes.push_back(use.hex);
        }
        PackInfo pack = write_pack(store, hexes, "tx" + std::to_string(tx));
        result.packs += 1;
        result.pack_bytes += pack.bytes;
        cold_packed.insert(hexes.begin(), hexes.end());
    }
    result.freed_bytes += delete_loose_copies(store, cold_packed);
    result.freed_bytes += delete_dead_packs(store);
    return result;
}

} // namespace venvtx
