// rollback: a new transaction whose target state is an older transaction's before-state.
#include "venvtx/ops/rollback.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/ops/drift.hpp"
#include "venvtx/ops/held_return.hpp"
#include "venvtx/ops/rollback_dry_run.hpp"
#include "venvtx/ops/rollback_plan.hpp"
#include "venvtx/ops/rollback_preview.hpp"
#include "venvtx/ops/rollback_reach.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/state/history_point.hpp"
#include "venvtx/state/state_index.hpp"
#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/mutation_session.hpp"
#include "venvtx/txn/preview.hpp"
#include "venvtx/upkeep/gc.hpp"

#include <functional>
#include <set>

namespace venvtx {

namespace {

// `rollback TX` of an older transaction: refused when a later transaction touched any of its
// paths (undo that one first, or roll back --to before both).
void refuse_touched_since(Store& store, const TransactionRecord& undone) {
    std::set<std::string> paths;
    for (const auto& entry : store.history().entries(undone.id)) {
        paths.insert(entry.path);
    }
    for (const auto& record : store.history().list(std::nullopt)) {
        if (record.id <= undone.id || record.state != TxState::committed || record.undone_by) {
            continue;
        }
        for (const auto& entry : store.history().entries(record.id)) {
            if (paths.count(entry.path) != 0) {
                throw Error(ExitCode::verify_failed,
                            "refusing to undo tx " + std::to_string(undone.id) + " alone: tx " + std::to_string(record.id) +
                                " (" + record.kind + ") changed " + entry.path + " since; nothing was changed " +
                                "(`venvtx rollback --to " + std::to_string(undone.id - 1) + "` undoes both)");
            }
        }
    }
}

// After `rollback --to N`: a change made outside venvtx since N stays (venvtx holds no copy of
// it), so the venv may not be in N's state. Said, and in JSON (`not_at_target`).
Outcome with_target_check(const Context& context, Store& store, std::int64_t to, Outcome outcome) {
    if (!outcome.tx || outcome.tx->state != TxState::committed || !outcome.tx->state_after) {
        return outcome;
    }
    std::string outside = outside_since(store, to);
    if (outside.empty()) {
        return outcome;
    }
    try {
        VenvState now{*outcome.tx->state_after, {}};
        HistoryPoint target = resolve_point(std::to_string(to), store, now);
        if (target.state != now.id) {
            std::string note = "the venv is not as at entry " + std::to_string(to) + ": " +
                               outside.substr(2, outside.size() - 3) + ", and venvtx holds no copy of that (`venvtx diff " +
                               std::to_string(to) + "` shows what differs)";
            context.out.say(note);
            outcome.extra["not_at_target"] = note;
            outcome.code = ExitCode::verify_failed; // committed, but not where it was asked to go
        }
    } catch (const Error&) { // no state recorded at N (an older history): nothing to compare
    }
    return outcome;
}

std::vector<TransactionRecord> targets(Store& store, const RollbackOptions& options) {
    std::vector<TransactionRecord> found;
    if (options.redo) {
        if (auto newest = store.history().newest_redoable()) {
            found.push_back(*newest);
        }
        return found;
    }
    if (options.tx) {
        auto record = store.history().find(*options.tx);
        if (record && record->kind == "outside") {
            refuse_outside_entry(*record);
        }
        if (!record || record->state == TxState::recorded) {
            throw Error(ExitCode::usage, "not_found",
                        "no transaction " + std::to_string(*options.tx) +
                            (record ? " (entry " + std::to_string(*options.tx) + " is " + record->kind +
                                          ", not a transaction: nothing to undo)"
                                    : ""),
                        {{"tx", *options.tx}});
        }
        if (record->state != TxState::committed || record->undone_by || record->kind == "rollback") {
            throw Error(ExitCode::usage, "not_undoable",
                        "tx " + std::to_string(*options.tx) + " cannot be undone: it is " +
                            (record->kind == "rollback" ? std::string("a rollback (`venvtx rollback --redo`)")
                                                        : std::string(to_string(record->state))) +
                            "; nothing was changed",
                        {{"tx", *options.tx}});
        }
        found.push_back(*record);
        return found;
    }
    if (!options.to) {
        auto newest = store.history().newest_undoable();
        refuse_newest_outside(store, newest, options.mutation.force);
        if (newest) {
            found.push_back(*newest);
        }
        return found;
    }
    if (*options.to != 0 && !store.history().find(*options.to)) {
        throw Error(ExitCode::usage, "not_found", "no entry " + std::to_string(*options.to) + " (see `venvtx log`)",
                    {{"tx", *options.to}});
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
// Returns what --force went past ("" when nothing drifted): kept with the rollback.
std::string refuse_drift(const Context& context, Store& store, const std::vector<TransactionRecord>& undo, bool force) {
    std::vector<DriftedPath> drifted = find_drift(context.layout, store.history(), undo);
    if (drifted.empty()) {
        return "";
    }
    std::string what = "tx " + std::to_string(undo.front().id) + (undo.size() > 1 ? " and earlier" : "");
    if (!force) {
        nlohmann::json details = drift_json(drifted);
        details["tx"] = undo.front().id;
        details["outside"] = nlohmann::json::array();
        for (const auto& record : store.history().list(std::nullopt)) {
            if (record.kind == "outside" && record.id > undo.back().id) {
                details["outside"].push_back(record.id);
            }
        }
        throw Error(ExitCode::verify_failed, "drift",
                    "refusing to undo " + what + ": " + describe_drift(drifted) + outside_since(store, undo.back().id) +
                        "; nothing was changed (--force stores the changed files and undoes it anyway)",
                    details);
    }
    std::string forced = "--force: undoing " + what + " over " + describe_drift(drifted) + outside_since(store, undo.back().id);
    context.out.say(forced + " (the changed files are stored first)");
    return forced;
}

// What the rollback changed, from the venv's states before and after it: a distribution an
// outside change had already put back is not said to come back again.
Outcome with_packages_from_states(Store& store, Outcome outcome) {
    if (!outcome.tx || outcome.tx->state != TxState::committed || !outcome.tx->state_before ||
        !outcome.tx->state_after) {
        return outcome;
    }
    try { // the transaction is committed: a damaged index leaves its packages as planned
        auto before = load_state(store.db(), *outcome.tx->state_before);
        auto after = load_state(store.db(), *outcome.tx->state_after);
        if (!before || !after) {
            return outcome;
        }
        std::vector<PackageChange> packages;
        for (const auto& change : state_changes(*before, *after)) {
            packages.push_back({change.name, change.before ? std::optional(change.before->version) : std::nullopt,
                                change.after ? std::optional(change.after->version) : std::nullopt});
        }
        store.history().set_packages(outcome.tx->id, packages);
        outcome.tx = store.history().find(outcome.tx->id);
    } catch (const Error&) {
    }
    return outcome;
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
            throw Error(ExitCode::usage, "pruned",
                        "tx " + std::to_string(record.id) + " (" + record.kind + ") was pruned by `venvtx gc`: " +
                            "its stored files may be gone, so it cannot be undone; nothing was changed",
                        {{"tx", record.id}});
        }
    }
}

// Runs a rollback's plan (`plan_for(live_probe)`): a probe runs in a preview of the rollback
// where the system allows one, and the live venv sees only a rollback that passed it.
Outcome run_rollback(const Context& context, const RollbackOptions& options, Store& store,
                     const std::function<TransactionPlan(bool live_probe)>& plan_for) {
    bool previewing = !options.mutation.probe.code.empty() && preview_skipped(options.mutation).empty();
    TransactionPlan plan = plan_for(!options.mutation.probe.code.empty() && !previewing);
    if (!previewing) {
        return with_packages_from_states(store, run_transaction(context, options.mutation, store, std::move(plan)));
    }
    PreviewedChange change;
    change.kind = "rollback";
    change.prepare = [&](const PreviewArea& area) { fill_upper_layer(context, store, plan, area); };
    change.in_view = [&] { return remove_in_view(context, plan); };
    change.plan = [&](const PreviewResult& preview) { return preview.used ? plan : plan_for(true); };
    change.apply_from_layer = false;
    change.progress_label = "previewing the rollback";
    return with_packages_from_states(store, run_previewed(context, options.mutation, store, change));
}

// A rollback that undoes a change made outside venvtx, from the files venvtx held of the state
// it goes back to. --force leaves out a held file changed in place, and says so (exit 6).
Outcome rollback_from_holds(const Context& context, const RollbackOptions& options, Store& store, HeldReturn& held) {
    if (held.changes.empty()) {
        context.out.verdict("the venv is as before " + held.label + " already: nothing to roll back");
        return Outcome{};
    }
    refuse_legacy_return(context, held);
    if (options.mutation.dry_run) {
        return held_return_dry_run(context, held);
    }
    context.out.say("undoing " + held.label + ", from the files venvtx held");
    Outcome outcome = run_rollback(context, options, store, [&](bool) {
        held.changed.clear();
        return held_return_transaction(context, store, held, options.mutation.force);
    });
    if (!held.changed.empty() && outcome.tx && outcome.tx->state == TxState::committed) {
        std::string note = "--force: left as they are, not as recorded: " + held.changed.front() +
                           (held.changed.size() > 1 ? " and " + std::to_string(held.changed.size() - 1) + " more" : "") +
                           " (changed in place since venvtx held them)";
        context.out.say(note);
        outcome.extra["not_at_target"] = note;
        outcome.code = ExitCode::verify_failed;
    }
    return retain_after(context, store, std::move(outcome));
}

} // namespace

Outcome rollback(const Context& context, const RollbackOptions& options) {
    if (!Store::exists(context.store_root)) {
        if (options.to == std::optional<std::int64_t>(0) && !options.redo) { // no entry: the venv is at 0
            context.out.verdict("already at entry 0 (no venvtx history yet): nothing to roll back");
            return Outcome{};
        }
        throw Error(ExitCode::usage, "nothing_to_undo",
                    std::string(options.redo ? "nothing to redo" : "nothing to roll back") +
                        ": no venvtx history in " + context.store_root.string(),
                    nlohmann::json::object());
    }
    MutationSession session(context, options.mutation.wait_s);
    Store& store = session.store();
    if (auto held = held_return_for(store, session.state_check().now, options); held && held->missing.empty()) {
        return rollback_from_holds(context, options, store, *held);
    }
    std::vector<TransactionRecord> undo = targets(store, options);
    refuse_pruned(store, options, undo);
    std::string short_of;
    if (options.to) {
        short_of = refuse_unreachable(store, session.state_check().now, *options.to, undo, options.mutation.force);
        if (undo.empty() && short_of.empty()) {
            context.out.verdict("already at entry " + std::to_string(*options.to) + ": nothing to roll back");
            return Outcome{};
        }
        if (!short_of.empty() && !undo.empty()) {
            context.out.say("--force: rolling back to entry " + std::to_string(*options.to) + " anyway: " + short_of);
        }
    }
    if (undo.empty()) {
        throw Error(ExitCode::usage, "nothing_to_undo",
                    options.redo ? std::string("nothing to redo: no rollback to undo")
                    : options.to ? "nothing to roll back after transaction " + std::to_string(*options.to)
                                 : std::string("nothing to roll back"),
                    nlohmann::json::object());
    }
    if (options.tx) {
        refuse_touched_since(store, undo.front());
    }
    std::string ids;
    for (const auto& record : undo) {
        ids += (ids.empty() ? "" : ", ") + std::to_string(record.id) + " (" + record.kind + ")";
    }
    if (options.mutation.dry_run) {
        context.out.say("would undo tx " + ids + (undo.size() > 1 ? " as one transaction" : "") + ":");
        return rollback_dry_run(context, store, undo, options.mutation.force);
    }
    std::string forced = refuse_drift(context, store, undo, options.mutation.force);
    context.out.say("undoing tx " + ids + (undo.size() > 1 ? " as one transaction" : ""));
    Outcome outcome = run_rollback(context, options, store, [&](bool live_probe) {
        TransactionPlan plan = undo.size() == 1
                                   ? inverse_of(context, store, undo.front(), live_probe, options.mutation.force)
                                   : combined_inverse(context, store, undo, *options.to, options.mutation.force);
        if (!forced.empty()) {
            plan.details = plan.details.value_or(nlohmann::json::object());
            (*plan.details)["forced"] = forced;
        }
        return plan;
    });
    if (options.to) {
        outcome = with_target_check(context, store, *options.to, std::move(outcome));
    }
    return retain_after(context, store, std::move(outcome));
}

} // namespace venvtx
