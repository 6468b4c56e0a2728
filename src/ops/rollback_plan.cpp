// inverse_of and combined_inverse: rollback plans from the journal.
#include "venvtx/ops/rollback_plan.hpp"

#include "venvtx/capture/pending_check.hpp"
#include "venvtx/capture/settle.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/txn/materialize.hpp"

#include <map>
#include <sys/stat.h>

namespace venvtx {

namespace {

bool same_filesystem(const Context& context, Store& store) {
    struct stat venv_root {}, store_root {};
    return ::stat(context.layout.root.c_str(), &venv_root) == 0 && ::stat(store.root().c_str(), &store_root) == 0 &&
           venv_root.st_dev == store_root.st_dev;
}

// The undone removal's pending captures, renamed back as they are where that is safe (one
// filesystem, and no probe on the live venv that could change or delete the only copy);
// otherwise hashed and stored first, so the rollback copies like any other.
// With `force`, the staged files that are still there but do not match are taken as they are
// now first (as the engine does for a zero-copy rollback).
std::map<std::string, PendingSource> pending_sources(const Context& context, Store& store, std::int64_t undone,
                                                     bool zero_copy, bool force) {
    if (!zero_copy && !pending_of(store.db(), undone).empty()) {
        if (force) {
            std::map<std::string, PendingSource> sources = pending_sources_of(store, undone);
            retake_changed(context.out, store, sources, check_pending(sources));
        }
        std::vector<std::string> left = settle_pending(store, undone);
        if (!left.empty()) {
            throw Error(ExitCode::verify_failed,
                        "the stored copy of " + left.front() + " is gone or does not match the hash recorded at tx " +
                            std::to_string(undone) + "'s removal: nothing was changed" +
                            (force ? "" : " (`--force` puts back such files as they are now, if they are there)"));
        }
    }
    return pending_sources_of(store, undone);
}

} // namespace

TransactionPlan inverse_of(const Context& context, Store& store, const TransactionRecord& undone, bool live_probe,
                           bool force) {
    TransactionPlan plan;
    plan.kind = "rollback";
    plan.undoes = undone.id;
    for (const auto& change : undone.packages) {
        plan.packages.push_back({change.name, change.after, change.before});
    }
    // Renamed back only within one filesystem: across two, a move is a copy, not atomic.
    bool same_fs = same_filesystem(context, store);
    plan.pending = pending_sources(context, store, undone.id, same_fs && !live_probe, force);
    for (const auto& recorded : store.history().entries(undone.id)) {
        Entry entry;
        entry.path = recorded.path;
        entry.before = observe_node(context.layout.root / recorded.path);
        entry.after = recorded.before;
        entry.owner = recorded.owner;
        plan.entries.push_back(std::move(entry));
    }
    if (!same_fs) {
        return plan;
    }
    std::set<std::string> loose;
    for (const auto& hex : objects_needed(plan.entries, Side::after)) {
        if (store.objects().has(hex)) {
            loose.insert(hex);
        }
    }
    plan.movable = store.history().referenced_only_by(undone.id, loose);
    return plan;
}

TransactionPlan combined_inverse(const Context& context, Store& store, const std::vector<TransactionRecord>& undone,
                                 std::int64_t target, bool force) {
    TransactionPlan plan;
    plan.kind = "rollback";
    plan.undoes = undone.front().id;
    nlohmann::json ids = nlohmann::json::array();
    std::map<std::string, Entry> oldest_before; // by path: the before-state of the oldest that touched it
    std::map<std::string, PackageChange> packages;
    for (const auto& record : undone) { // newest first: an older one overwrites
        ids.push_back(record.id);
        if (record.id != undone.front().id) {
            plan.undoes_too.push_back(record.id);
        }
        pending_sources(context, store, record.id, false, force); // hashed and stored: copied like any object
        for (auto& recorded : store.history().entries(record.id)) {
            oldest_before[recorded.path] = std::move(recorded);
        }
        for (const auto& change : record.packages) {
            auto [found, fresh] = packages.try_emplace(change.name, PackageChange{change.name, change.after, change.before});
            if (!fresh) {
                found->second.after = change.before;
            }
        }
    }
    for (const auto& [name, change] : packages) {
        if (change.before != change.after) {
            plan.packages.push_back(change);
        }
    }
    for (const auto& [path, recorded] : oldest_before) {
        Entry entry;
        entry.path = path;
        entry.before = observe_node(context.layout.root / path);
        entry.after = recorded.before;
        entry.owner = recorded.owner;
        plan.entries.push_back(std::move(entry));
    }
    std::string listed;
    for (const auto& id : ids) {
        listed += (listed.empty() ? "" : ", ") + std::to_string(id.get<std::int64_t>());
    }
    plan.details = nlohmann::json{{"to", target}, {"undoes", ids}, {"note", "to " + std::to_string(target) + ": undoes " + listed}};
    return plan;
}

} // namespace venvtx
