// Switching units into place: shadows built, journaled, exchanged, old versions cleared.
#include "venvtx/txn/switching.hpp"

#include "switch_trees.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/store/switch_rows.hpp"
#include "venvtx/venv/names.hpp"
#include "venvtx/venv/switch_units.hpp"

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <sys/statfs.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

constexpr decltype(statfs::f_type) k_overlayfs_magic = 0x794c7630; // OVERLAYFS_SUPER_MAGIC

bool is_metadata_dir(const std::string& path) {
    auto ends = [&](const std::string& suffix) {
        return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends(".dist-info") || ends(".egg-info");
}

// The distribution a dist-info names, normalized (PEP 503): "Foo_Bar-1.0.dist-info" -> "foo-bar".
std::string distribution_of(const std::string& path) {
    std::string name = stdfs::path(path).filename().string();
    return normalize_name(name.substr(0, name.find('-')));
}

struct Unit {
    std::string path;
    std::string shadow;
    std::set<std::string> entries;  // venv-relative
    bool live = false;    // something is at the unit's path now
    bool target = true;   // something is there in the end
    bool target_dir = true;
    int order = 0;
};

// Metadata goes first on a removal and last on an install, and an old dist-info leaves only once
// its new one is in: a reader of importlib.metadata never finds a distribution whose files are
// missing, or none where one stays.
void order_units(std::vector<Unit>& units) {
    std::set<std::string> arriving;
    for (const auto& unit : units) {
        if (is_metadata_dir(unit.path) && unit.target) {
            arriving.insert(distribution_of(unit.path));
        }
    }
    for (auto& unit : units) {
        if (!is_metadata_dir(unit.path)) {
            unit.order = 1;
        } else if (unit.target) {
            unit.order = 2;
        } else {
            unit.order = arriving.count(distribution_of(unit.path)) != 0 ? 3 : 0;
        }
    }
    std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.order < b.order; });
}

// A namespace directory (no __init__.py, now or after) that stays, such as nvidia/: each
// package in it switches on its own, instead of the whole directory with every other package's
// files linked into its shadow.
void split_namespaces(const VenvLayout& layout, std::map<std::string, Unit>& by_path) {
    std::map<std::string, Unit> split;
    for (auto it = by_path.begin(); it != by_path.end();) {
        Unit& unit = it->second;
        bool stays = unit.entries.count(unit.path) == 0;
        stdfs::path live = layout.root / unit.path;
        bool namespace_dir = observe_node(live).type == NodeType::dir &&
                             observe_node(live / "__init__.py").type == NodeType::absent &&
                             unit.entries.count(unit.path + "/__init__.py") == 0;
        if (!stays || !namespace_dir) {
            ++it;
            continue;
        }
        for (const auto& path : unit.entries) {
            std::string rest = path.substr(unit.path.size() + 1);
            std::string child = unit.path + "/" + rest.substr(0, rest.find('/'));
            Unit& slot = split[child];
            slot.path = child;
            slot.entries.insert(path);
        }
        it = by_path.erase(it);
    }
    by_path.merge(split);
}

std::vector<Unit> plan_units(const VenvLayout& layout, std::int64_t tx, int phase, const std::vector<Entry>& entries,
                             Side side, std::vector<std::size_t>& others) {
    SwitchUnits units_of(layout);
    std::map<std::string, Unit> by_path;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        std::optional<std::string> unit = units_of.unit_of(entries[i].path);
        if (!unit) {
            others.push_back(i);
            continue;
        }
        Unit& slot = by_path[*unit];
        slot.path = *unit;
        slot.entries.insert(entries[i].path);
    }
    split_namespaces(layout, by_path);
    for (const auto& entry : entries) {
        auto unit = by_path.find(entry.path);
        if (unit != by_path.end()) { // else the unit is a directory that stays
            unit->second.target_dir = target_of(entry, side).type == NodeType::dir;
            unit->second.target = target_of(entry, side).type != NodeType::absent;
        }
    }
    std::vector<Unit> units;
    for (auto& [path, unit] : by_path) {
        unit.live = observe_node(layout.root / path).type != NodeType::absent;
        stdfs::path shadow = stdfs::path(path).parent_path() /
                             (".venvtx-sw-" + std::to_string(tx) + "-" + std::to_string(phase) + "-" +
                              std::to_string(units.size()));
        unit.shadow = shadow.string();
        units.push_back(std::move(unit));
    }
    order_units(units);
    return units;
}

// Why units cannot be exchanged here, or nothing: on overlayfs a directory of a lower layer
// (a venv baked into a container image) refuses to move (EXDEV) though new ones trade; elsewhere
// two empty directories are traded and removed.
std::optional<std::string> exchange_refused(const VenvLayout& layout, const std::string& first_shadow) {
    if (struct statfs fs_stat {}; ::statfs(layout.root.c_str(), &fs_stat) == 0 && fs_stat.f_type == k_overlayfs_magic) {
        return "the venv is on overlayfs, whose lower layers' directories cannot be exchanged";
    }
    Fs& fs = Fs::instance();
    stdfs::path a = exchange_trial_path(layout.root / first_shadow, "a");
    stdfs::path b = exchange_trial_path(layout.root / first_shadow, "b");
    fs.mkdir(a, 0700);
    fs.mkdir(b, 0700);
    bool works = true;
    try {
        fs.exchange(a, b);
    } catch (const FsError& error) {
        int err = error.errno_value();
        if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP && err != ENOTSUP) {
            throw;
        }
        works = false;
    }
    fs.rmdir(a);
    fs.rmdir(b);
    return works ? std::nullopt : std::optional<std::string>("the filesystem refuses RENAME_EXCHANGE");
}

// A clone that cannot be made as the live unit is: a file another user owns under
// fs.protected_hardlinks (EPERM), a mount inside the unit (EXDEV), a file at its link limit.
bool unclonable(const FsError& error) {
    int err = error.errno_value();
    return err == EPERM || err == EACCES || err == EXDEV || err == EMLINK;
}

// The entries at `indices`, as one list for materialize.
std::vector<Entry> subset(const std::vector<Entry>& entries, const std::vector<std::size_t>& indices) {
    std::vector<Entry> picked;
    picked.reserve(indices.size());
    for (std::size_t i : indices) {
        picked.push_back(entries[i]);
    }
    return picked;
}

void merge(MaterializeResult& into, MaterializeResult from) {
    auto append = [](auto& to, auto& more) { to.insert(to.end(), more.begin(), more.end()); };
    append(into.moved, from.moved);
    append(into.unrestored, from.unrestored);
    append(into.returned, from.returned);
    append(into.returned_pending, from.returned_pending);
    append(into.linked, from.linked);
}

UnitPathTest journaled_in(const Unit& unit) {
    return [&unit](const std::string& rel) {
        return unit.entries.count(rel.empty() ? unit.path : unit.path + "/" + rel) != 0;
    };
}

class SwitchRun {
public:
    SwitchRun(const VenvLayout& layout, Store& store, std::int64_t tx, int phase, std::vector<Entry>& entries,
              Side side, const MaterializeSources& sources)
        : m_layout(layout), m_store(store), m_tx(tx), m_phase(phase), m_entries(entries), m_side(side),
          m_sources(sources) {}

    SwitchedResult run(const std::function<void(const Relocation&)>& after_switch) {
        std::vector<std::size_t> others;
        m_units = plan_units(m_layout, m_tx, m_phase, m_entries, m_side, others);
        if (m_units.empty()) {
            return path_by_path(after_switch, "");
        }
        std::vector<SwitchRow> rows;
        std::map<std::string, std::string> shadows;
        std::set<std::string> fresh;
        for (const auto& unit : m_units) {
            SwitchRow row{m_tx, m_phase, unit.path, unit.shadow};
            row.fresh = !unit.live;
            rows.push_back(row);
            shadows[unit.path] = unit.shadow;
            if (!unit.live) {
                fresh.insert(unit.path);
            }
        }
        for (const auto& unit : m_units) {
            Fs::instance().mkdirs((m_layout.root / unit.shadow).parent_path());
        }
        begin_switches(m_store.db(), rows);
        if (auto refused = exchange_refused(m_layout, m_units.front().shadow)) {
            forget_switches(m_store.db(), m_tx, m_phase);
            return path_by_path(after_switch, *refused);
        }
        std::vector<ClosedDir> closed;
        try {
            closed = clone_units();
        } catch (const FsError& error) {
            if (!unclonable(error)) {
                throw;
            }
            for (const auto& unit : m_units) { // links and directories only: nothing placed yet
                Fs::instance().remove_tree(m_layout.root / unit.shadow);
            }
            forget_switches(m_store.db(), m_tx, m_phase);
            return path_by_path(after_switch, std::string("a unit cannot be cloned: ") + error.what());
        }
        Relocation relocation(shadows, fresh);
        SwitchedResult result;
        // An apply that removes a unit whole builds nothing for it: the unit goes with one
        // rename, and its old version is the capture.
        std::set<std::string> gone;
        for (const auto& unit : m_units) {
            if (m_side == Side::after && unit.live && !unit.target) {
                gone.insert(unit.path);
            }
        }
        std::set<std::size_t> outside(others.begin(), others.end());
        std::vector<std::size_t> in_units;
        for (std::size_t i = 0; i < m_entries.size(); ++i) {
            std::optional<std::string> unit = relocation.unit_of(m_entries[i].path);
            if (outside.count(i) == 0 && !(unit && gone.count(*unit) != 0)) {
                in_units.push_back(i);
            }
        }
        std::vector<Entry> shadowed = subset(m_entries, in_units);
        MaterializeSources sources = m_sources;
        sources.relocation = &relocation;
        sources.movable = movable_for(in_units);
        ShadowMaterialize shadow(m_layout, m_store.objects(), shadowed, m_side, sources);
        build(shadow, shadowed, relocation, closed);
        if (m_side == Side::after && !shadow.unplaced().empty()) {
            result.placed.unrestored = shadow.unplaced();
            settle_switches(m_layout, m_store, m_tx); // nothing was switched: the shadows go
            return result;
        }
        // Each shadow whole on disk before it is switched in: its files were flushed as they were
        // placed, the links its clone made are flushed with the directories that hold them.
        Fs::instance().flush({}, std::set<stdfs::path>(m_cloned.begin(), m_cloned.end()), m_layout.root);
        std::vector<std::string> switched = switch_units(rows);
        result.units = switched.size();
        result.placed = shadow.check_switched(switched);
        for (const auto& unit : gone) { // checked whole: nothing below a path that is not there
            if (observe_node(m_layout.root / unit).type != NodeType::absent) {
                result.placed.unrestored.push_back(unit);
            }
        }
        if (m_side == Side::after && !result.placed.unrestored.empty()) {
            return result; // the restore's settle_switches trades each unit back
        }
        after_switch(relocation);
        mark_switches_done(m_store.db(), m_tx, m_phase);
        clear_away(switched, others, relocation, result);
        return result; // the rows stay, `done`: the check for outside changes reads which units moved
    }

private:
    SwitchedResult path_by_path(const std::function<void(const Relocation&)>& after_switch, const std::string& why) {
        after_switch(Relocation());
        SwitchedResult result;
        result.per_path = why;
        result.placed = materialize(m_layout, m_store.objects(), m_entries, m_side, m_sources);
        return result;
    }

    // Once switched and captured: the sources the shadows linked go, each old version is cleared
    // (what someone else wrote into it stays, named), and the paths in no unit come last.
    void clear_away(const std::vector<std::string>& switched, const std::vector<std::size_t>& others,
                    const Relocation& relocation, SwitchedResult& result) {
        // An object the capture just adopted again (a pre-image with the same bytes: the rename
        // replaced the linked name) stays.
        std::set<std::string> captured =
            m_side == Side::after ? objects_needed(m_entries, Side::before) : std::set<std::string>();
        std::set<std::string> done(switched.begin(), switched.end());
        drop_linked(result.placed, captured, done, relocation);
        for (const auto& unit : m_units) {
            if (done.count(unit.path) == 0) {
                Fs::instance().remove_tree(m_layout.root / unit.shadow); // never switched in
                continue;
            }
            for (const auto& kept : clear_old_tree(m_layout.root / unit.shadow, m_layout.root / unit.path,
                                                   journaled_in(unit))) {
                result.left.push_back(unit.shadow + (kept.empty() ? "" : "/" + kept));
            }
        }
        if (others.empty()) {
            return;
        }
        std::vector<Entry> rest = subset(m_entries, others);
        MaterializeSources plain = m_sources;
        plain.movable.clear();
        for (const auto& hex : movable_for(others)) {
            if (captured.count(hex) == 0) {
                plain.movable.insert(hex);
            }
        }
        merge(result.placed, materialize(m_layout, m_store.objects(), rest, m_side, plain));
    }

    // Movable objects the entries at `indices` alone use.
    std::set<std::string> movable_for(const std::vector<std::size_t>& indices) const {
        std::set<std::string> inside;
        std::set<std::string> outside;
        std::set<std::size_t> picked(indices.begin(), indices.end());
        for (std::size_t i = 0; i < m_entries.size(); ++i) {
            const NodeState& target = target_of(m_entries[i], m_side);
            if (target.type == NodeType::file && m_sources.movable.count(target.object) != 0) {
                (picked.count(i) != 0 ? inside : outside).insert(target.object);
            }
        }
        std::set<std::string> movable;
        for (const auto& hex : inside) {
            if (outside.count(hex) == 0) {
                movable.insert(hex);
            }
        }
        return movable;
    }

    // Each unit's new version in its shadow begins as a clone: a live directory that stays one
    // (on an apply without the leaves the change replaces: their old versions stay where the
    // capture finds them). Returns the directories cloned closed.
    std::vector<ClosedDir> clone_units() {
        std::vector<ClosedDir> closed;
        for (const auto& unit : m_units) {
            stdfs::path live = m_layout.root / unit.path;
            // A restore clones a unit it removes too: what it finds there may be a rollback's
            // only copy of a stored file, which goes back to the store from the shadow.
            bool stays = unit.target && unit.target_dir;
            if (unit.live && (stays || m_side == Side::before) && observe_node(live).type == NodeType::dir) {
                UnitPathTest skip = [&](const std::string& rel) {
                    return m_side == Side::after && journaled_in(unit)(rel);
                };
                std::vector<ClosedDir> more = clone_tree(live, m_layout.root / unit.shadow, skip, m_cloned);
                closed.insert(closed.end(), more.begin(), more.end());
            } else if (m_side == Side::before && unit.live && is_leaf(observe_node(live).type)) {
                clone_leaf(live, m_layout.root / unit.shadow); // what a restore finds there decides
            }
        }
        return closed;
    }

    // Then the entries are brought to their state there, and the cloned directories closed again.
    void build(ShadowMaterialize& shadow, const std::vector<Entry>& shadowed, const Relocation& relocation,
               const std::vector<ClosedDir>& closed) {
        shadow.place();
        std::set<std::string> journaled;
        for (const auto& entry : shadowed) {
            journaled.insert(relocation.locate(m_layout.root, entry.path).string());
        }
        for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
            if (journaled.count(it->path.string()) == 0 && observe_node(it->path).type == NodeType::dir) {
                Fs::instance().chmod(it->path, it->mode); // materialize closed the journaled ones
            }
        }
    }

    // Whether the unit's root is still what the change expects (the state it leaves, or the one
    // it brings): anything else was put there meanwhile, and is not switched away.
    bool expected_at_root(const Unit& unit) const {
        NodeType now = observe_node(m_layout.root / unit.path).type;
        if (m_sources.owns_every_node) {
            return true; // a command's restore: whatever the command left is its own
        }
        for (const auto& entry : m_entries) {
            if (entry.path == unit.path) {
                const NodeState& leaving = m_side == Side::before ? entry.after : entry.before;
                return now == leaving.type || now == target_of(entry, m_side).type;
            }
        }
        return now == NodeType::dir;
    }

    // The inodes that tell a switched unit from an unswitched one, journaled; then one exchange
    // or rename each. Returns the units switched.
    std::vector<std::string> switch_units(std::vector<SwitchRow>& rows) {
        std::map<std::string, SwitchRow*> by_unit;
        for (auto& row : rows) {
            row.old_ino = inode_at(m_layout.root / row.unit);
            row.new_ino = inode_at(m_layout.root / row.shadow);
            by_unit[row.unit] = &row;
        }
        mark_switches_ready(m_store.db(), rows);
        Fs& fs = Fs::instance();
        std::vector<std::string> switched;
        std::set<stdfs::path> moved_in; // the directories the exchanges changed
        for (const auto& unit : m_units) {
            const SwitchRow& row = *by_unit.at(unit.path);
            stdfs::path live = m_layout.root / unit.path;
            stdfs::path shadow = m_layout.root / unit.shadow;
            if (!expected_at_root(unit) || unit.target != (row.new_ino != 0)) {
                continue; // someone else's, or not built: its paths are named by the check
            }
            if (row.old_ino != 0 && row.new_ino != 0) {
                fs.exchange(shadow, live);
            } else if (row.new_ino != 0) {
                fs.rename(shadow, live);
            } else if (row.old_ino != 0) {
                fs.rename(live, shadow);
            }
            switched.push_back(unit.path);
            moved_in.insert(live.parent_path());
            moved_in.insert(shadow.parent_path());
        }
        fs.flush({}, moved_in, m_layout.root);
        return switched;
    }

    // What a shadow linked from staging or the store, in a unit switched in: its only name is
    // now in the venv. An object `kept` names stays, and is not moved out after all.
    void drop_linked(MaterializeResult& placed, const std::set<std::string>& kept,
                     const std::set<std::string>& switched, const Relocation& relocation) {
        std::set<std::string> staying = kept;
        for (const auto& linked : placed.linked) {
            std::optional<std::string> unit = relocation.unit_of(linked.path);
            bool in_place = unit && switched.count(*unit) != 0;
            if (!in_place || kept.count(linked.object) != 0) {
                if (!linked.object.empty()) {
                    staying.insert(linked.object);
                }
                continue;
            }
            if (observe_node(linked.source).type != NodeType::absent) {
                Fs::instance().unlink(linked.source);
            }
        }
        std::erase_if(placed.moved, [&](const std::string& hex) { return staying.count(hex) != 0; });
    }

    const VenvLayout& m_layout;
    Store& m_store;
    std::int64_t m_tx;
    int m_phase;
    std::vector<Entry>& m_entries;
    Side m_side;
    const MaterializeSources& m_sources;
    std::vector<Unit> m_units;
    std::vector<stdfs::path> m_cloned; // the directories clone_units made
};

} // namespace

SwitchedResult switch_into_place(const VenvLayout& layout, Store& store, std::int64_t tx, int phase,
                                 std::vector<Entry>& entries, Side side, const MaterializeSources& sources,
                                 const std::function<void(const Relocation&)>& after_switch) {
    return SwitchRun(layout, store, tx, phase, entries, side, sources).run(after_switch);
}

} // namespace venvtx
