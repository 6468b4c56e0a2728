// remove_distributions: plan and impact under the locks, then one transaction (or, with
// --keep-going, a search for the largest subset that passes).
#include "venvtx/ops/remove.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/ops/command.hpp"
#include "venvtx/ops/unprobed_removal.hpp"
#include "venvtx/ops/keep_going.hpp"
#include "venvtx/report/plan_text.hpp"
#include "venvtx/store/indexed_facts.hpp"
#include "venvtx/txn/engine.hpp"
#include "venvtx/txn/mutation_session.hpp"
#include "venvtx/txn/preview.hpp"
#include "venvtx/upkeep/gc.hpp"
#include "venvtx/venv/inventory.hpp"
#include "venvtx/venv/legacy_installs.hpp"
#include "venvtx/venv/names.hpp"
#include "venvtx/venv/own_distribution.hpp"

#include <algorithm>
#include <set>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace venvtx {

namespace {

// Removed files that the newest passing probe had mapped (e.g. preloaded with ctypes).
std::vector<std::string> footprint_hits(Store* store, const RemovalPlan& plan) {
    std::vector<std::string> hits;
    if (!store) {
        return hits;
    }
    auto record = store->history().newest_passing_probe();
    if (!record) {
        return hits;
    }
    const auto& report = record->probe && record->probe->value("passed", false) ? record->probe : record->baseline;
    std::set<std::string> mapped;
    for (const auto& path : probe_report_from_json(*report).mapped) {
        mapped.insert(path);
    }
    for (const auto& planned : plan.files) {
        if (mapped.count(planned.path) != 0) {
            hits.push_back(planned.path + " (mapped by the probe of tx " + std::to_string(record->id) + ")");
        }
    }
    return hits;
}

PlannedRemoval plan_with_impact(const Context& context, const RemoveOptions& options, Store* store) {
    PlannedRemoval planned;
    IndexedFacts facts(store);
    {
        Progress::Phase phase("reading the venv's distributions");
        planned.inventory = scan_inventory(context.layout, &facts);
        planned.plan = plan_removal(context.layout, planned.inventory, options.patterns, context.store_root,
                                    options.strict);
    }
    if (planned.plan.targets.empty()) {
        return planned; // already gone: nothing to read or say
    }
    {
        Progress::Phase phase("reading shared libraries");
        LibraryIndex index(context.layout, planned.inventory, context.store_root, SystemLibraries::load(), &facts);
        planned.impact = analyze_removal(index, planned.plan, planned.inventory);
        for (const auto& problem : index.problems()) {
            context.out.debug("unreadable shared object " + problem);
        }
    }
    try {
        facts.save();
    } catch (const Error& error) { // a cache: the plan stands without it
        context.out.debug("facts not kept for the next plan: " + std::string(error.what()));
    }
    planned.impact.footprint = footprint_hits(store, planned.plan);
    say_removal_plan(context.out, planned.plan);
    say_removal_impact(context.out, context.layout, planned.impact);
    return planned;
}

// The venv's installer (pip: `venvtx install` and pip itself run it), and the venvtx running now
// when it was installed into this venv, go only with --force.
void refuse_removing_tools(const Context& context, const RemoveOptions& options) {
    if (options.mutation.force) {
        return;
    }
    auto named = [&](const std::string& name) {
        return std::any_of(options.patterns.begin(), options.patterns.end(),
                           [&](const std::string& pattern) { return name_matches(pattern, name); });
    };
    for (const auto& installed : installed_versions(context.layout)) {
        if (named(installed.first) && normalize_name(installed.first) == "pip") {
            throw usage_error("refusing to remove pip: it is this venv's installer (`venvtx install` runs it); "
                              "--force removes it anyway; nothing was changed");
        }
    }
    std::optional<OwnDistribution> own = own_distribution(context.layout, context.store_root);
    if (own && named(own->name)) {
        refuse_changing_own_distribution(*own, {own->binary}, "to remove " + own->name);
    }
}

// An .egg-link editable or an .egg, which pip removes by editing easy-install.pth: the removal is
// the venv's own `pip uninstall -y`, run as a command transaction (captured, previewed, probed,
// undone by rollback as any), on its own: patterns that also name a distribution venvtx removes
// itself are refused. Nothing when no pattern names one.
std::optional<Outcome> remove_through_pip(const Context& context, const RemoveOptions& options) {
    std::vector<LegacyInstall> legacy = legacy_installs_named(context.layout, options.patterns, true);
    if (legacy.empty()) {
        return std::nullopt;
    }
    for (const auto& dist : scan_inventory(context.layout)) {
        for (const auto& pattern : options.patterns) {
            if (name_matches(pattern, dist.name)) {
                throw Error(ExitCode::usage, "legacy_install",
                            "'" + pattern + "' names " + dist.name + ", and " + legacy.front().name +
                                " is a legacy install (" + legacy.front().path +
                                ") that the venv's pip removes: remove it on its own; nothing was changed",
                            {{"name", legacy.front().name}, {"path", legacy.front().path}});
            }
        }
    }
    std::error_code error;
    bool has_pip = std::any_of(context.layout.site_packages.begin(), context.layout.site_packages.end(),
                               [&](const auto& site) { return std::filesystem::is_directory(site / "pip", error); });
    if (!has_pip) {
        throw Error(ExitCode::usage, "legacy_install",
                    legacy.front().name + " is a legacy install (" + legacy.front().path + ") that pip removes, and "
                        "the venv has no pip: `pip --python " + context.layout.python.string() + " uninstall " +
                        legacy.front().name + "` removes it; nothing was changed",
                    {{"name", legacy.front().name}, {"path", legacy.front().path}});
    }
    std::vector<std::string> names;
    for (const auto& install : legacy) {
        context.out.say(install.name + ": a legacy install (" + install.path +
                        "), removed by the venv's pip, which edits easy-install.pth");
        names.push_back(install.name);
    }
    std::vector<std::string> argv = uninstall_command(installer_command(context.layout, Installer::pip, {}, {}), names);
    return run_command_transaction(context, CommandOptions{"run", argv, false, CaptureMode::automatic, {},
                                                           options.mutation});
}

// None of the patterns is installed: already gone, success with nothing changed (pip: "Skipping X
// as it is not installed", exit 0); --strict refused before this.
Outcome nothing_to_remove(const Context& context, const std::vector<UnmatchedPattern>& unmatched, bool dry_run) {
    say_unmatched(context.out, unmatched);
    context.out.say("nothing to remove: nothing was changed");
    Outcome outcome;
    outcome.dry_run = dry_run;
    RemovalPlan empty;
    empty.unmatched = unmatched;
    outcome.plan = removal_plan_json(empty, RemovalImpact{});
    return outcome;
}

} // namespace

nlohmann::json remove_in_view(const VenvLayout& layout, const RemovalPlan& plan) {
    // Outside the fs seam on purpose: this runs in the preview's worker, inside the private view,
    // where nothing is live (the upper layer gets whiteouts) and failpoints count live steps only.
    // Still contained: the parent is opened beneath the venv root without following symlinks.
    auto remove = [&](const std::string& rel, int flags) {
        ParentDir parent = Confinement::instance().open_parent(layout.root / rel);
        if (::unlinkat(parent.dir.get(), parent.leaf.c_str(), flags) != 0 && errno != ENOENT) {
            throw system_error("remove " + rel + " in the preview", errno);
        }
    };
    for (const auto& planned : plan.files) {
        remove(planned.path, 0);
    }
    for (const auto& planned : plan.dirs) { // deepest first
        remove(planned.path, AT_REMOVEDIR);
    }
    return nlohmann::json::object();
}

TransactionPlan removal_transaction(const RemovalPlan& removal) {
    TransactionPlan plan;
    plan.kind = "remove";
    std::set<std::string> by_uv;
    for (const Distribution* dist : removal.targets) {
        plan.packages.push_back({dist->name, dist->version, std::nullopt});
        if (dist->installer == "uv") {
            by_uv.insert(dist->name);
        }
    }
    for (const auto& group : {&removal.files, &removal.dirs}) {
        for (const auto& planned : *group) {
            Entry entry;
            entry.path = planned.path;
            entry.before = planned.state;
            entry.owner = planned.owner;
            if (!planned.record_hash.empty()) {
                plan.hints.record_hashes[planned.path] = planned.record_hash;
            }
            if (by_uv.count(planned.owner) > 0) {
                plan.hints.uv_linked.insert(planned.path);
            }
            plan.entries.push_back(std::move(entry));
        }
    }
    return plan;
}

Outcome remove_distributions(const Context& context, const RemoveOptions& options) {
    refuse_removing_tools(context, options);
    if (std::optional<Outcome> outcome = remove_through_pip(context, options)) {
        return *outcome;
    }
    if (options.mutation.dry_run && !options.mutation.probe.code.empty() &&
        options.mutation.preview == PreviewMode::never) {
        throw usage_error("--dry-run with --probe tries the removal in a private view, which --preview never "
                          "forbids: drop one of them");
    }
    if (options.mutation.dry_run) {
        std::optional<Store> history; // read only: a dry run creates no store
        if (Store::exists(context.store_root)) {
            history.emplace(context.store_root, false);
        }
        PlannedRemoval planned = plan_with_impact(context, options, history ? &*history : nullptr);
        if (planned.plan.targets.empty()) {
            return nothing_to_remove(context, planned.plan.unmatched, true);
        }
        if (!options.mutation.probe.code.empty()) {
            return run_what_if(context, options.mutation, "the removal",
                               [&] { return remove_in_view(context.layout, planned.plan); },
                               [&](const nlohmann::json&) { return removal_plan_json(planned.plan, planned.impact); },
                               "what-if: removing in a private view and probing");
        }
        if (unprobed_unasked(options.mutation)) {
            if (auto breakage = unprobed_breakage(planned.impact, planned.inventory)) {
                context.out.say("without a probe it would be refused: " + breakage->what + ". " + breakage->how);
            }
        }
        context.out.say("dry run: nothing changed");
        Outcome outcome;
        outcome.dry_run = true;
        outcome.plan = removal_plan_json(planned.plan, planned.impact);
        return outcome;
    }
    if (!Store::exists(context.store_root)) { // bad input, or nothing to do, leaves no store behind
        std::vector<Distribution> inventory = scan_inventory(context.layout);
        TargetSelection selection = select_targets(context.layout, inventory, options.patterns, options.strict);
        if (selection.targets.empty()) {
            return nothing_to_remove(context, selection.unmatched, false);
        }
    }
    // Plan under the locks: another venvtx (or uv) may change the venv until we hold them.
    MutationSession session(context, options.mutation.wait_s);
    Store& store = session.store();
    PlannedRemoval planned = plan_with_impact(context, options, &store);
    if (planned.plan.targets.empty()) {
        return nothing_to_remove(context, planned.plan.unmatched, false);
    }
    refuse_unprobed_breakage(options.mutation, planned.impact, planned.inventory);
    if (options.keep_going) {
        return retain_after(context, store, remove_keep_going(context, options, store, planned));
    }
    PreviewedChange change;
    change.kind = "remove";
    change.in_view = [&] { return remove_in_view(context.layout, planned.plan); };
    change.plan = [&](const PreviewResult&) {
        TransactionPlan plan = removal_transaction(planned.plan);
        plan.details = nlohmann::json{{"plan", removal_plan_json(planned.plan, planned.impact)}};
        return plan;
    };
    change.progress_label = "removing in a private view and probing";
    return retain_after(context, store, run_previewed(context, options.mutation, store, change));
}

} // namespace venvtx
