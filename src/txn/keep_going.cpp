// remove_keep_going: whole set, then the impact-guided guess, then narrowing by probe errors.
#include "venvtx/txn/keep_going.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/txn/report.hpp"

#include <algorithm>
#include <map>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::string probe_error(const Outcome& outcome) {
    if (!outcome.tx || !outcome.tx->probe) {
        return {};
    }
    return probe_report_from_json(*outcome.tx->probe).error.value_or("");
}

// Distributions among `names` one of whose shared libraries the probe error names.
std::vector<std::string> named_in_error(const RemovalPlan& plan, const std::vector<std::string>& names,
                                        const std::string& error) {
    std::vector<std::string> culprits;
    for (const auto& planned : plan.files) {
        std::string file = stdfs::path(planned.path).filename().string();
        if (is_shared_library_name(file) && error.find(file) != std::string::npos &&
            std::find(names.begin(), names.end(), planned.owner) != names.end() &&
            std::find(culprits.begin(), culprits.end(), planned.owner) == culprits.end()) {
            culprits.push_back(planned.owner);
        }
    }
    return culprits;
}

// Later attempts skip the baseline but keep its GPU expectation.
MutationOptions attempt_options(MutationOptions options, const Outcome& first) {
    options.no_baseline = true;
    if (options.probe.gpus.mode == GpuExpectation::Mode::automatic && first.tx && first.tx->baseline) {
        ProbeReport baseline = probe_report_from_json(*first.tx->baseline);
        if (baseline.gpus) {
            options.probe.gpus = {GpuExpectation::Mode::exact, static_cast<int>(baseline.gpus->size())};
        }
    }
    return options;
}

} // namespace

Outcome remove_keep_going(const Context& context, const MutationOptions& options, Store& store,
                          const PlannedRemoval& planned) {
    if (options.probe.code.empty()) {
        throw usage_error("--keep-going needs --probe CODE: it searches for what the probe tolerates");
    }
    Outcome outcome = run_transaction(context, options, store, removal_transaction(planned.plan));
    int probes = (options.no_baseline ? 0 : 1) + (outcome.tx && outcome.tx->probe ? 1 : 0);
    std::vector<std::int64_t> attempts = {outcome.tx ? outcome.tx->id : 0};
    std::map<std::string, std::string> kept;
    if (outcome.code == ExitCode::probe_failed) {
        std::string error = probe_error(outcome);
        context.out.verdict("keep-going: the whole set failed the probe (" + error + ")");
        for (const auto& lost : planned.impact.lost) {
            for (const auto& owner : lost.provider_owners) {
                kept.emplace(owner, lost.soname + " needed by " +
                                        display_path(context.layout, lost.consumers.front().path) + " (" +
                                        lost.consumers.front().owner + ")");
            }
        }
        std::vector<std::string> candidates;
        for (const Distribution* dist : planned.plan.targets) {
            if (kept.count(dist->name) == 0) {
                candidates.push_back(dist->name);
            }
        }
        for (const auto& culprit : named_in_error(planned.plan, candidates, error)) {
            kept.emplace(culprit, "the probe error names its library: " + error);
            candidates.erase(std::find(candidates.begin(), candidates.end(), culprit));
        }
        MutationOptions next = attempt_options(options, outcome);
        while (!candidates.empty()) {
            context.out.say("keep-going: trying without " + std::to_string(kept.size()) + " distribution(s)");
            std::vector<Distribution> inventory = scan_inventory(context.layout);
            RemovalPlan plan = plan_removal(context.layout, inventory, candidates, context.store_root);
            outcome = run_transaction(context, next, store, removal_transaction(plan));
            ++probes;
            attempts.push_back(outcome.tx ? outcome.tx->id : 0);
            if (outcome.code != ExitCode::probe_failed) {
                break;
            }
            std::string again = probe_error(outcome);
            std::vector<std::string> culprits = named_in_error(plan, candidates, again);
            if (culprits.empty()) {
                culprits.push_back(candidates.back());
            }
            for (const auto& culprit : culprits) {
                kept.emplace(culprit, "the probe still failed with it removed: " + again);
                candidates.erase(std::find(candidates.begin(), candidates.end(), culprit));
            }
        }
    }
    nlohmann::json kept_json = nlohmann::json::array();
    for (const auto& [name, reason] : kept) {
        context.out.verdict("kept " + name + ": " + reason);
        kept_json.push_back({{"name", name}, {"reason", reason}});
    }
    context.out.verdict("keep-going: " + std::to_string(probes) + " probe(s) run");
    outcome.extra["keep_going"] = {{"kept", kept_json}, {"probes", probes}, {"attempts", attempts}};
    return outcome;
}

} // namespace venvtx
