// rollback: a new transaction whose target state is an older transaction's before-state.
#include "venvtx/ops/rollback.hpp"

#include "venvtx/capture/pending_check.hpp"
#include "venvtx/capture/settle.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/ops/drift.hpp"
#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/materialize.hpp"
#include "venvtx/txn/mutation_session.hpp"
#include "venvtx/upkeep/gc.hpp"

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

// The inverse of `undone`: every path goes from what it is now to what it was before `undone`.
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

std::vector<TransactionRecord> targets(Store& store, const RollbackOptions& options) {
    std::vector<TransactionRecord> found;
    if (options.redo) {
        if (auto newest = store.history().newest_redoable()) {
            found.push_back(*newest);
        }
        return found;
    }
    if (!options.to) {
        if (auto newest = store.history().newest_undoable()) {
            found.push_back(*newest);
        }
        return found;
    }
    if (!store.history().find(*options.to)) {
        throw usage_error("no transaction " + std::to_string(*options.to));
    }
    for (const auto& record : store.history().list(std::nullopt)) {
        if (record.id > *options.to && record.state == TxState::committed && !record.undone_by &&
            record.kind != "rollback") {
            found.push_back(record);
        }
    }
    return found;
}

// Before anything moves: the venv must hold what the undone transactions left (exit 6 names
// what changed). With --force the rollback goes on; its capture stores the changed files first.
void refuse_drift(const Context& context, Store& store, const std::vector<TransactionRecord>& undo, bool force) {
    std::vector<DriftedPath> drifted = find_drift(context.layout, store.history(), undo);
    if (drifted.empty()) {
        return;
    }
    std::string what = "tx " + std::to_string(undo.front().id) + (undo.size() > 1 ? " and earlier" : "");
    if (!force) {
        throw Error(ExitCode::verify_failed, "refusing to undo " + what + ": " + describe_drift(drifted) +
                                                 "; nothing was changed (--force stores the changed files "
                                                 "and undoes it anyway)");
    }
    context.out.say("--force: undoing " + what + " over " + describe_drift(drifted) +
                    " (the changed files are stored first)");
}

// A transaction gc pruned that this rollback would have undone: its objects may be gone, so the
// rollback is refused before anything moves (exit 2, naming it).
void refuse_pruned(Store& store, const RollbackOptions& options, const std::vector<TransactionRecord>& undo) {
    if (!undo.empty() && !options.to) {
        return; // the newest target is newer than every pruned transaction
    }
    for (const auto& record : store.history().list(std::nullopt)) {
        bool is_rollback = record.kind == "rollback";
        if (options.redo && is_rollback && record.undoes) { // a redo (a rollback of a rollback) is not redone
            auto undone = store.history().find(*record.undoes);
            is_rollback = undone && undone->kind != "rollback";
        } else if (options.redo) {
            is_rollback = false;
        }
        bool was_undoable = record.state == TxState::pruned && record.pruned_from == TxState::committed &&
                            !record.undone_by && (options.redo ? is_rollback : record.kind != "rollback");
        if (was_undoable && record.id > options.to.value_or(0)) {
            throw usage_error("tx " + std::to_string(record.id) + " (" + record.kind + ") was pruned by `venvtx gc`: " +
                              "its stored files may be gone, so it cannot be undone; nothing was changed");
        }
    }
}

} // namespace

Outcome rollback(const Context& context, const RollbackOptions& options) {
    if (!Store::exists(context.store_root)) {
        throw usage_error(std::string(options.redo ? "nothing to redo" : "nothing to roll back") +
                          ": no venvtx history in " + context.store_root.string());
    }
    MutationSession session(context, options.mutation.wait_s);
    Store& store = session.store();
    std::vector<TransactionRecord> undo = targets(store, options);
    refuse_pruned(store, options, undo);
    if (undo.empty()) {
        throw usage_error(options.redo ? std::string("nothing to redo: no rollback to undo")
                          : options.to ? "nothing to roll back after transaction " + std::to_string(*options.to)
                                       : std::string("nothing to roll back"));
    }
    refuse_drift(context, store, undo, options.mutation.force);
    Outcome outcome;
    for (const auto& record : undo) {
        context.out.say("undoing tx " + std::to_string(record.id) + " (" + record.kind + ")");
        if (options.mutation.dry_run) {
            continue;
        }
        bool live_probe = !options.mutation.probe.code.empty();
        outcome = retain_after(context, store,
                               run_transaction(context, options.mutation, store,
                                               inverse_of(context, store, record, live_probe, options.mutation.force)));
        if (outcome.code != ExitCode::ok) {
            return outcome;
        }
    }
    return outcome;
}

} // namespace venvtx
