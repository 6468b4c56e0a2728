// Settling what a killed switch left, before a restore path by path.
#include "venvtx/txn/switching.hpp"

#include "switch_trees.hpp"

#include "venvtx/core/fs.hpp"
#include "venvtx/core/node_state.hpp"
#include "venvtx/store/switch_rows.hpp"

#include <map>
#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// One journaled unit after a kill: see settle_switches.
void settle_row(const VenvLayout& layout, const SwitchRow& row, const std::set<std::string>& journaled) {
    Fs& fs = Fs::instance();
    stdfs::path live = layout.root / row.unit;
    stdfs::path shadow = layout.root / row.shadow;
    if (row.state == SwitchState::done) {
        clear_old_tree(shadow, live, [&](const std::string& rel) {
            return journaled.count(rel.empty() ? row.unit : row.unit + "/" + rel) != 0;
        });
        return;
    }
    if (row.fresh) {
        // Nothing was there, and its shadow may hold sources it took by rename: the switch is
        // completed, and the restore path by path puts each of them back where it came from.
        if (observe_node(live).type == NodeType::absent && observe_node(shadow).type != NodeType::absent) {
            fs.rename(shadow, live);
        }
        return; // or someone made the unit meanwhile: the shadow stays, its paths named
    }
    if (row.state == SwitchState::ready) {
        std::int64_t at_live = inode_at(live);
        std::int64_t at_shadow = inode_at(shadow);
        if (row.new_ino != 0 && at_live == row.new_ino && row.old_ino != 0 && at_shadow == row.old_ino) {
            fs.exchange(shadow, live);
        } else if (row.new_ino != 0 && at_live == row.new_ino && row.old_ino == 0 && at_shadow == 0) {
            fs.rename(live, shadow);
        } else if (row.new_ino == 0 && row.old_ino != 0 && at_live == 0 && at_shadow == row.old_ino) {
            fs.rename(shadow, live);
        }
        if (row.new_ino == 0 || inode_at(shadow) != row.new_ino) {
            return; // the shadow is the old version, back in place, or someone else's
        }
    }
    fs.remove_tree(shadow); // a new version never switched in: links, and the layer's files
}

} // namespace

void settle_switches(const VenvLayout& layout, Store& store, std::int64_t tx) {
    std::vector<SwitchRow> rows = switches_of(store.db(), tx);
    if (rows.empty()) {
        return;
    }
    std::set<std::string> journaled;
    std::map<std::string, std::int64_t> unit_entries;  // a unit root's entry: its temporaries lie beside the shadow
    for (const auto& entry : store.history().entries(tx)) {
        journaled.insert(entry.path);
        unit_entries[entry.path] = entry.id;
    }
    std::set<int> phases;
    for (const auto& row : rows) {
        if (phases.insert(row.phase).second) {
            for (const char* which : {"a", "b"}) {
                Fs::instance().remove_tree(exchange_trial_path(layout.root / row.shadow, which));
            }
        }
        settle_row(layout, row, journaled);
        auto root = unit_entries.find(row.unit);
        stdfs::path shadow = layout.root / row.shadow;
        for (const auto& temporary : {Fs::move_temporary(shadow), root == unit_entries.end()
                                                                      ? stdfs::path()
                                                                      : temporary_path_for(shadow, root->second)}) {
            if (!temporary.empty() && observe_node(temporary).type != NodeType::absent) {
                Fs::instance().unlink(temporary);
            }
        }
    }
    for (int phase : phases) {
        forget_switches(store.db(), tx, phase);
    }
}

} // namespace venvtx
