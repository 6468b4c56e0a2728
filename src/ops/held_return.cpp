// The held return: a rollback's target state put back from the holds, as one transaction.
#include "venvtx/ops/held_return.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/ops/keep_going.hpp"
#include "venvtx/state/history_point.hpp"
#include "venvtx/ops/command_plan.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/store/holds.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/legacy_installs.hpp"
#include "venvtx/venv/own_distribution.hpp"
#include "venvtx/venv/removal_plan.hpp"

#include <map>
#include <set>

namespace venvtx {

namespace {

std::string dist_text(const DistState& dist) { return dist.name + " " + dist.version; }

bool has_object_row(Store& store, const std::string& hex) {
    Statement query = store.db().prepare("SELECT 1 FROM objects WHERE sha256 = ?");
    query.bind(1, hex);
    return query.step();
}

NodeState dir_node(mode_t mode) {
    NodeState node;
    node.type = NodeType::dir;
    node.mode = mode;
    return node;
}

NodeState file_node(const nlohmann::json& item) {
    NodeState node;
    node.type = NodeType::file;
    node.mode = item.at(2).get<mode_t>();
    node.size = item.at(3).get<std::uint64_t>();
    node.mtime_ns = item.at(4).get<std::int64_t>();
    node.object = item.at(5).get<std::string>();
    return node;
}

std::string listed(const std::vector<std::string>& paths) {
    std::string text;
    for (std::size_t i = 0; i < paths.size() && i < 3; ++i) {
        text += (i ? ", " : "") + paths[i];
    }
    return paths.size() > 3 ? text + " and " + std::to_string(paths.size() - 3) + " more" : text;
}

nlohmann::json packages_json(const std::vector<DistChange>& changes) {
    nlohmann::json packages = nlohmann::json::array();
    for (const auto& change : changes) {
        packages.push_back({{"name", change.name},
                            {"before", change.before ? nlohmann::json(change.before->version) : nlohmann::json()},
                            {"after", change.after ? nlohmann::json(change.after->version) : nlohmann::json()}});
    }
    return packages;
}

} // namespace

VenvState state_without(const VenvState& now, const TransactionRecord& entry, Store& store) {
    auto before = entry.state_before ? load_state(store.db(), *entry.state_before) : std::nullopt;
    auto after = entry.state_after ? load_state(store.db(), *entry.state_after) : std::nullopt;
    if (!before || !after) {
        throw Error(ExitCode::usage, "not_undoable",
                    "entry " + std::to_string(entry.id) + " recorded no state to go back to; nothing was changed",
                    {{"tx", entry.id}});
    }
    std::map<std::string, DistState> dists;
    for (const auto& dist : now.dists) {
        dists[dist.normalized] = dist;
    }
    for (const auto& change : state_changes(*before, *after)) {
        std::string normalized = change.after ? change.after->normalized : change.before->normalized;
        auto found = dists.find(normalized);
        std::optional<DistState> current = found == dists.end() ? std::nullopt : std::optional(found->second);
        if (current != change.after) {
            throw Error(ExitCode::usage, "not_undoable",
                        "refusing to undo entry " + std::to_string(entry.id) + " alone: " + change.name +
                            " changed since (now " + (current ? current->version : std::string("∅")) +
                            "); nothing was changed (`venvtx rollback --to " + std::to_string(entry.id) +
                            "^` undoes it and what came after)",
                        {{"tx", entry.id}});
        }
        if (change.before) {
            dists[normalized] = *change.before;
        } else {
            dists.erase(normalized);
        }
    }
    std::vector<DistState> list;
    for (auto& [name, dist] : dists) {
        list.push_back(std::move(dist));
    }
    return make_state(std::move(list));
}

HeldReturn plan_held_return(Store& store, const VenvState& now, VenvState target,
                            std::vector<std::int64_t> undoes, std::string label) {
    HeldReturn held;
    held.changes = state_changes(now, target);
    held.target = std::move(target);
    held.undoes = std::move(undoes);
    held.label = std::move(label);
    Holds holds(store.db(), store.root());
    for (const auto& change : held.changes) {
        if (!change.after) {
            continue;
        }
        auto layout = change.after->record.empty() ? std::nullopt : holds.layout(change.after->record);
        if (!layout) {
            held.missing.push_back(dist_text(*change.after) + " (venvtx never held its files)");
            continue;
        }
        for (const auto& item : *layout) {
            if (item.at(0) != "f") {
                continue;
            }
            std::string hex = item.at(5).get<std::string>();
            if (!holds.find(hex) && !has_object_row(store, hex)) {
                held.missing.push_back(item.at(1).get<std::string>());
            }
        }
    }
    return held;
}

namespace {

// The distributions the return takes away, by normalized name.
std::vector<std::string> leaving_distributions(const HeldReturn& held) {
    std::vector<std::string> leaving;
    for (const auto& change : held.changes) {
        if (change.before) {
            leaving.push_back(change.before->normalized);
        }
    }
    return leaving;
}

} // namespace

void refuse_legacy_return(const Context& context, const HeldReturn& held) {
    legacy_installs_named(context.layout, leaving_distributions(held), false);
}

TransactionPlan held_return_transaction(const Context& context, Store& store, HeldReturn& held, bool force) {
    std::vector<std::string> leaving = leaving_distributions(held);
    TransactionPlan plan;
    if (!leaving.empty()) {
        plan = removal_transaction(plan_removal(context.layout, scan_inventory(context.layout), leaving,
                                                context.store_root, true));
    }
    plan.kind = "rollback";
    plan.packages.clear();
    for (const auto& change : held.changes) {
        plan.packages.push_back({change.name, change.before ? std::optional(change.before->version) : std::nullopt,
                                 change.after ? std::optional(change.after->version) : std::nullopt});
    }
    std::map<std::string, Entry> by_path;
    for (auto& entry : plan.entries) {
        entry.after = NodeState{};
        by_path[entry.path] = std::move(entry);
    }
    Holds holds(store.db(), store.root());
    std::map<std::string, nlohmann::json> layouts; // by RECORD hash
    std::map<std::string, std::int64_t> wanted;    // what the target's files hash to, and their sizes
    for (const auto& change : held.changes) {
        if (change.after) {
            auto& layout = layouts[change.after->record];
            layout = holds.layout(change.after->record).value_or(nlohmann::json::array());
            for (const auto& item : layout) {
                if (item.at(0) == "f") {
                    wanted[item.at(5).get<std::string>()] = item.at(3).get<std::int64_t>();
                }
            }
        }
    }
    SqlTransaction adopted(store.db()); // one commit for every object row the adopts add
    std::set<std::string> to_adopt;
    for (const auto& [hex, size] : wanted) {
        if (!store.objects().has(hex)) {
            to_adopt.insert(hex);
        } else if (!has_object_row(store, hex)) {
            holds.index_object(hex, size); // a loose file an adopt cut short left: hashed before use
        }
    }
    std::map<std::string, HoldUse> uses = holds.adopt(to_adopt, store.objects());
    for (auto& [hex, use] : uses) {
        if (use == HoldUse::adopted) {
            plan.movable.insert(hex); // linked just now: no other transaction's copy
            plan.hashed.insert(hex);
        } else if (has_object_row(store, hex)) {
            use = HoldUse::adopted; // packed: the engine unpacks it
        }
    }
    for (const auto& change : held.changes) {
        if (!change.after) {
            continue;
        }
        for (const auto& item : layouts[change.after->record]) {
            std::string path = item.at(1).get<std::string>();
            auto existing = by_path.find(path);
            if (item.at(0) == "d") {
                NodeState now = existing != by_path.end() ? existing->second.before : observe_node(context.layout.root / path);
                if (now.type == NodeType::dir && existing == by_path.end()) {
                    continue; // there, and staying
                }
                Entry& entry = by_path[path];
                entry.path = path;
                entry.before = now;
                entry.after = dir_node(item.at(2).get<mode_t>());
                continue;
            }
            NodeState after = file_node(item);
            auto use = uses.find(after.object);
            if (use != uses.end() && use->second != HoldUse::adopted) {
                held.changed.push_back(path);
                continue;
            }
            Entry& entry = by_path[path];
            if (entry.path.empty()) {
                entry.path = path;
                entry.before = observe_node(context.layout.root / path);
            }
            entry.after = after;
            entry.owner = change.after->name;
        }
    }
    adopted.commit(); // the objects stay either way: a refusal below leaves them for the next try
    if (!held.changed.empty() && !force) {
        throw Error(ExitCode::verify_failed, "hold_changed",
                    "refusing to undo " + held.label + ": " + listed(held.changed) +
                        " changed in place since venvtx held it, so its bytes are not the recorded ones; nothing " +
                        "was changed (--force puts back the rest and leaves such files as they are)",
                    {{"paths", held.changed}});
    }
    for (const auto& path : held.changed) {
        by_path.erase(path);
    }
    plan.entries.clear();
    std::vector<std::string> paths;
    for (auto& [path, entry] : by_path) {
        paths.push_back(path);
        plan.entries.push_back(std::move(entry));
    }
    if (auto own = force ? std::nullopt : own_distribution(context.layout, context.store_root)) {
        refuse_changing_own_distribution(*own, paths, "this rollback");
    }
    plan.undoes = held.undoes.front();
    plan.undoes_too.assign(held.undoes.begin() + 1, held.undoes.end());
    plan.details = nlohmann::json{{"note", "undoes " + held.label + " from the files venvtx held"},
                                  {"undoes", held.undoes}};
    if (!held.changed.empty()) {
        (*plan.details)["left_out"] = held.changed;
    }
    return plan;
}

std::optional<HeldReturn> held_return_for(Store& store, const VenvState& now, const RollbackOptions& options) {
    if (options.redo) {
        return std::nullopt;
    }
    auto outside_and_live = [](const TransactionRecord& record) {
        return record.kind == "outside" && !record.undone_by;
    };
    if (options.tx) {
        auto record = store.history().find(*options.tx);
        if (!record || record->kind != "outside") {
            return std::nullopt;
        }
        if (record->undone_by) {
            throw Error(ExitCode::usage, "not_undoable",
                        "entry " + std::to_string(record->id) + " was undone by tx " +
                            std::to_string(*record->undone_by) + " already; nothing was changed",
                        {{"tx", record->id}});
        }
        std::string label = "entry " + std::to_string(record->id) + " (outside)";
        return plan_held_return(store, now, state_without(now, *record, store), {record->id}, label);
    }
    std::vector<TransactionRecord> history = store.history().list(std::nullopt); // newest first
    if (!options.to) {
        auto newest = store.history().newest_undoable();
        for (const auto& record : history) {
            if (newest && record.id <= newest->id) {
                break;
            }
            if (outside_and_live(record)) {
                std::string label = "entry " + std::to_string(record.id) + " (outside)";
                return plan_held_return(store, now, state_without(now, record, store), {record.id}, label);
            }
        }
        return std::nullopt;
    }
    std::vector<std::int64_t> undoes;
    bool outside = false;
    for (const auto& record : history) {
        if (record.id <= *options.to) {
            break;
        }
        bool live_transaction = record.state == TxState::committed && !record.undone_by && record.kind != "rollback";
        if (live_transaction || outside_and_live(record)) {
            undoes.push_back(record.id);
            outside = outside || record.kind == "outside";
        }
    }
    if (!outside) {
        return std::nullopt;
    }
    VenvState target;
    try {
        target = point_state(store, resolve_point(std::to_string(*options.to), store, now), now);
    } catch (const Error&) { // no state recorded at N (an older history)
        return std::nullopt;
    }
    std::string label = "the entries after " + std::to_string(*options.to);
    return plan_held_return(store, now, std::move(target), std::move(undoes), label);
}

Outcome held_return_dry_run(const Context& context, const HeldReturn& held) {
    context.out.say("would undo " + held.label + ", from the files venvtx held:");
    Outcome outcome;
    outcome.dry_run = true;
    outcome.plan = {{"kind", "rollback"}, {"undoes", held.undoes}, {"packages", packages_json(held.changes)},
                    {"from_holds", true}, {"refused", nullptr}};
    say_command_plan(context.out, outcome.plan);
    context.out.say("  from the files venvtx held of each (checked by inode and hash when applied)");
    context.out.say("dry run: nothing changed");
    return outcome;
}

} // namespace venvtx
