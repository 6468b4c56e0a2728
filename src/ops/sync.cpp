// sync_to: the point's versions against the venv's, one installer command, one transaction.
#include "venvtx/ops/sync.hpp"

#include "venvtx/ops/history_queries.hpp"
#include "venvtx/report/entry_text.hpp"
#include "venvtx/report/transaction_text.hpp"
#include "venvtx/venv/names.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace venvtx {

namespace {

// Normalized name -> the distribution pip sees (a shadowed second dist-info aside).
std::map<std::string, const DistState*> visible(const VenvState& state) {
    std::map<std::string, const DistState*> dists;
    for (const auto& dist : state.dists) {
        if (!dist.shadowed) {
            dists.emplace(dist.normalized, &dist);
        }
    }
    return dists;
}

struct SyncPlan {
    std::vector<PackageChange> changes;
    std::vector<std::string> remove;   // names
    std::vector<std::string> install;  // name==version
};

SyncPlan plan_sync(const VenvState& now, const VenvState& target) {
    SyncPlan plan;
    auto have = visible(now);
    auto want = visible(target);
    for (const auto& [normalized, dist] : have) {
        if (want.count(normalized) == 0) {
            plan.changes.push_back({dist->name, dist->version, std::nullopt});
            plan.remove.push_back(dist->name);
        }
    }
    for (const auto& [normalized, dist] : want) {
        auto found = have.find(normalized);
        if (found == have.end() || found->second->version != dist->version) {
            plan.changes.push_back({dist->name, found == have.end() ? std::nullopt : std::optional(found->second->version),
                                    dist->version});
            plan.install.push_back(dist->name + "==" + dist->version);
        }
    }
    std::sort(plan.changes.begin(), plan.changes.end(),
              [](const PackageChange& a, const PackageChange& b) { return normalize_name(a.name) < normalize_name(b.name); });
    return plan;
}

// One shell command line: the removals, then the installs (the user's index options with
// them), and pip's own removal last, where pip does the rest.
std::vector<std::string> sync_command(const Context& context, const SyncOptions& options, const SyncPlan& plan) {
    std::vector<std::string> installer = installer_command(context.layout, options.installer, {}, {});
    std::vector<std::string> remove = plan.remove;
    auto pip = std::find_if(remove.begin(), remove.end(), [](const std::string& name) { return normalize_name(name) == "pip"; });
    bool pip_last = installer.front() != "uv" && pip != remove.end();
    if (pip_last) {
        remove.erase(pip);
    }
    std::vector<std::string> steps;
    if (!remove.empty()) {
        steps.push_back(shell_command(uninstall_command(installer, remove)));
    }
    if (!plan.install.empty()) {
        std::vector<std::string> install = installer;
        install.push_back("--no-deps");
        install.insert(install.end(), plan.install.begin(), plan.install.end());
        install.insert(install.end(), options.installer_args.begin(), options.installer_args.end());
        steps.push_back(shell_command(install));
    }
    if (pip_last) {
        steps.push_back(shell_command(uninstall_command(installer, {"pip"})));
    }
    std::string script;
    for (const auto& step : steps) {
        script += (script.empty() ? "" : " && ") + step;
    }
    return {"sh", "-c", script};
}

// "entry 3" for a number, else the point as typed.
std::string point_label(const HistoryPoint& point) {
    bool number = !point.text.empty() && std::all_of(point.text.begin(), point.text.end(), ::isdigit);
    return number ? "entry " + point.text : point.text;
}

} // namespace

Outcome sync_to(const Context& context, const SyncOptions& options) {
    auto [point, target] = state_at(context, options.point);
    auto [now_point, now] = state_at(context, "now");
    SyncPlan plan = plan_sync(now, target);
    if (plan.changes.empty()) {
        context.out.verdict("the venv has " + point_label(point) + "'s versions already: nothing to sync");
        return Outcome{};
    }
    context.out.say("sync to " + point_label(point) + " through the installer: " + counted(plan.changes.size(), "distribution"));
    for (const auto& change : plan.changes) {
        context.out.say("  " + package_change_text(change));
    }
    CommandOptions command{"sync", sync_command(context, options, plan), options.copy_small_files, options.capture,
                           plan.install, options.mutation};
    context.out.debug("command: " + command.argv.back());
    Outcome outcome = run_command_transaction(context, command);
    if (outcome.dry_run || !outcome.tx || outcome.tx->state != TxState::committed) {
        return outcome;
    }
    SyncPlan left = plan_sync(state_at(context, "now").second, target);
    if (!left.changes.empty()) {
        std::string note = "not at " + point_label(point) + "'s versions: " + package_change_text(left.changes.front()) +
                           (left.changes.size() > 1 ? " and " + std::to_string(left.changes.size() - 1) + " more" : "") +
                           " still to change";
        context.out.say(note);
        outcome.extra["not_at_target"] = note;
        outcome.code = ExitCode::verify_failed;
    }
    return outcome;
}

} // namespace venvtx
