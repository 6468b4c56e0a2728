// rollback --dry-run: the plan of a rollback, read from the history, and its drift check.
#include "venvtx/ops/rollback_dry_run.hpp"

#include "venvtx/ops/command_plan.hpp"
#include "venvtx/ops/drift.hpp"
#include "venvtx/venv/own_distribution.hpp"

#include <map>
#include <set>

namespace venvtx {

namespace {

// Newest first: what each distribution is now (the newest change's after) and would be (the
// oldest change's before); unchanged ones dropped.
nlohmann::json packages_undone(const std::vector<TransactionRecord>& undo) {
    std::map<std::string, std::pair<std::optional<std::string>, std::optional<std::string>>> ends;
    for (const auto& record : undo) {
        for (const auto& change : record.packages) {
            auto found = ends.find(change.name);
            if (found == ends.end()) {
                ends[change.name] = {change.after, change.before};
            } else {
                found->second.second = change.before;
            }
        }
    }
    nlohmann::json packages = nlohmann::json::array();
    for (const auto& [name, now_and_then] : ends) {
        if (now_and_then.first != now_and_then.second) {
            auto text = [](const std::optional<std::string>& version) {
                return version ? nlohmann::json(*version) : nlohmann::json();
            };
            packages.push_back({{"name", name}, {"before", text(now_and_then.first)}, {"after", text(now_and_then.second)}});
        }
    }
    return packages;
}

} // namespace

Outcome rollback_dry_run(const Context& context, Store& store, const std::vector<TransactionRecord>& undo,
                         bool force) {
    nlohmann::json ids = nlohmann::json::array();
    std::set<std::string> paths;
    for (const auto& record : undo) {
        ids.push_back(record.id);
        for (const auto& entry : store.history().entries(record.id)) {
            paths.insert(entry.path);
        }
    }
    std::optional<OwnDistribution> own = force ? std::nullopt : own_distribution(context.layout, context.store_root);
    if (own) { // refused as the rollback would be
        refuse_changing_own_distribution(*own, {paths.begin(), paths.end()}, "this rollback");
    }
    Outcome outcome;
    outcome.dry_run = true;
    outcome.plan = {{"kind", "rollback"}, {"undoes", ids}, {"packages", packages_undone(undo)},
                    {"paths", paths}, {"refused", nullptr}};
    say_command_plan(context.out, outcome.plan);
    context.out.say("  would restore " + counted(paths.size(), "path"));
    std::vector<DriftedPath> drifted = find_drift(context.layout, store.history(), undo);
    if (!drifted.empty()) {
        std::string why = describe_drift(drifted);
        nlohmann::json refused = drift_json(drifted);
        refused["message"] = why;
        refused["forced"] = force;
        outcome.plan["refused"] = refused;
        if (force) {
            context.out.say("--force would go past the drift: " + why + " (stored first)");
        } else {
            context.out.verdict("it would be refused: " + why + " (--force goes past it)");
            outcome.code = ExitCode::verify_failed;
        }
    }
    context.out.say("dry run: nothing changed");
    return outcome;
}

} // namespace venvtx
