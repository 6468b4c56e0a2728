// remove_keep_going: the whole set first (previewed beside the baseline, or in place), then the
// search of subset_search.hpp with its candidates previewed side by side (or tried in place one
// by one), then the chosen subset applied to the live venv once.
#include "venvtx/ops/keep_going.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/ops/subset_search.hpp"
#include "venvtx/report/probe_text.hpp"
#include "venvtx/txn/preview.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace venvtx {

namespace {

// What the impact analysis says about each distribution: whether removing it leaves a soname
// with nothing to load (risk 2) or with a system copy only (risk 1), and those system copies.
struct Expectations {
    std::map<std::string, int> risk;
    std::map<std::string, std::vector<const LostLibrary*>> lost_by_owner;
};

Expectations expectations_from(const RemovalImpact& impact) {
    Expectations expected;
    for (const auto& lost : impact.lost) {
        bool missing = std::any_of(lost.consumers.begin(), lost.consumers.end(), [](const LibraryConsumer& c) {
            return c.after.kind == Resolution::Kind::missing;
        });
        for (const auto& owner : lost.provider_owners) {
            expected.risk[owner] = std::max(expected.risk[owner], missing ? 2 : 1);
            expected.lost_by_owner[owner].push_back(&lost);
        }
    }
    return expected;
}

// "libcudnn.so.9 -> /usr/lib/libcudnn.so.9" for each soname of `name` that no distribution left
// after removing `removed` provides, where the loader then takes a system copy.
std::vector<std::string> system_copies(const Expectations& expected, const std::string& name,
                                       const std::vector<std::string>& removed) {
    std::vector<std::string> copies;
    auto found = expected.lost_by_owner.find(name);
    if (found == expected.lost_by_owner.end()) {
        return copies;
    }
    for (const LostLibrary* lost : found->second) {
        bool all_gone = std::all_of(lost->provider_owners.begin(), lost->provider_owners.end(), [&](const auto& o) {
            return std::find(removed.begin(), removed.end(), o) != removed.end();
        });
        for (const auto& consumer : lost->consumers) {
            if (all_gone && consumer.after.kind == Resolution::Kind::system) {
                copies.push_back(lost->soname + " -> " + consumer.after.path);
                break;
            }
        }
    }
    return copies;
}

std::string joined(const std::vector<std::string>& names, const char* separator = ", ") {
    std::string text;
    for (const auto& name : names) {
        text += (text.empty() ? "" : separator) + name;
    }
    return text;
}

std::string probe_error(const std::optional<nlohmann::json>& report) {
    return report ? probe_report_from_json(*report).error.value_or("") : "";
}

class KeepGoing {
public:
    KeepGoing(const Context& context, const RemoveOptions& options, Store& store, const PlannedRemoval& planned)
        : m_context(context), m_options(options), m_store(store), m_planned(planned),
          m_expected(expectations_from(planned.impact)) {}

    Outcome run() {
        std::vector<std::string> candidates = choose_candidates();
        if (candidates.empty()) {
            throw usage_error("--keep-going --no-system-fallback: every named distribution would leave a library "
                              "to a system copy; nothing to try (nothing was changed)");
        }
        m_previewing = preview_skipped(m_options.mutation).empty();
        Outcome outcome = try_whole(candidates);
        if (outcome.code == ExitCode::baseline_failed || m_whole.passed) {
            if (m_whole.passed) {
                m_search.trials = {m_whole};
            }
            return report(std::move(outcome), m_whole.passed ? candidates : std::vector<std::string>{});
        }
        m_candidate_options = candidate_options();
        SubsetSearch search = largest_passing_subset(
            candidates, m_whole, [&](const auto& sets) { return run_trials(sets); },
            [&](const std::string& name) { return m_expected.risk.count(name) ? m_expected.risk.at(name) : 0; },
            m_previewing ? jobs() : 1);
        m_search = search;
        if (!search.removed.empty()) {
            outcome = apply(search.removed);
        } else if (m_whole_preview) {
            std::int64_t id = record_failed_preview(m_context, m_store, "remove", m_whole_preview->packages,
                                                    m_whole_preview->result);
            outcome.tx = m_store.history().find(id);
        }
        return report(std::move(outcome), search.removed);
    }

private:
    // --no-system-fallback: a distribution whose libraries would then come from the system is
    // kept without a probe.
    std::vector<std::string> choose_candidates() {
        std::vector<std::string> candidates;
        for (const Distribution* dist : m_planned.plan.targets) {
            std::vector<std::string> copies = system_copies(m_expected, dist->name, {dist->name});
            if (m_options.no_system_fallback && !copies.empty()) {
                m_refused[dist->name] = "its " + joined(copies) + " would come from the system (--no-system-fallback)";
            } else {
                candidates.push_back(dist->name);
            }
        }
        return candidates;
    }

    Outcome try_whole(const std::vector<std::string>& names) {
        TransactionPlan plan = removal_transaction(plan_for(names));
        plan.needs_passing_baseline = true; // a search for what the probe tolerates needs one it passes
        m_whole.removed = names;
        std::sort(m_whole.removed.begin(), m_whole.removed.end());
        if (m_previewing) {
            PreviewArea area(m_context.store_root);
            RemovalPlan removal = plan_for(names);
            PreviewResult preview = run_preview(m_context, m_options.mutation, area,
                                                [&] { return remove_in_view(m_context.layout, removal); },
                                                "keep-going: previewing the whole removal and probing");
            m_previewing = preview.used;
            m_baseline = preview.baseline;
            if (preview.used && !preview.baseline_failed()) {
                m_probes += 1 + (preview.baseline ? 1 : 0);
                m_whole.passed = !preview.failure && preview.probe && preview.probe->passed;
                m_whole.error = preview.failure ? *preview.failure : preview.probe ? preview.probe->error.value_or("") : "";
                if (m_whole.passed) {
                    m_previewed[m_whole.removed] = *preview.probe;
                    return apply(names);
                }
                say_baseline();
                // Recorded only if no subset passes: the live venv never saw it, and the search's
                // transaction holds it as its first trial.
                m_whole_preview = WholePreview{plan.packages, preview};
                m_context.out.verdict("keep-going: removing all " + std::to_string(names.size()) +
                                      " failed the probe in a private view: " + m_whole.error);
                return {ExitCode::probe_failed, std::nullopt};
            }
            plan.baseline = preview.baseline; // in place from here (or nothing: the baseline failed)
        }
        Outcome outcome = run_transaction(m_context, m_options.mutation, m_store, std::move(plan));
        if (outcome.tx) {
            m_attempts.push_back(outcome.tx->id);
        }
        if (outcome.tx && outcome.tx->baseline) {
            m_baseline = probe_report_from_json(*outcome.tx->baseline);
        }
        m_probes += (m_baseline ? 1 : 0) + (outcome.tx && outcome.tx->probe ? 1 : 0);
        m_whole.passed = outcome.code == ExitCode::ok;
        m_whole.error = outcome.tx ? probe_error(outcome.tx->probe) : "";
        return outcome;
    }

    // Later probes skip the baseline but keep its GPU count.
    MutationOptions candidate_options() const {
        MutationOptions options = m_options.mutation;
        options.no_baseline = true;
        if (options.probe.gpus.mode == GpuExpectation::Mode::automatic && m_baseline && m_baseline->gpus) {
            options.probe.gpus = {GpuExpectation::Mode::exact, static_cast<int>(m_baseline->gpus->size())};
        }
        return options;
    }

    std::vector<Trial> run_trials(const std::vector<std::vector<std::string>>& sets) {
        std::vector<Trial> trials;
        if (m_previewing) {
            std::vector<RemovalPlan> plans;
            std::vector<std::function<nlohmann::json()>> changes;
            for (const auto& set : sets) {
                plans.push_back(plan_for(set));
            }
            for (const auto& plan : plans) {
                changes.push_back([this, &plan] { return remove_in_view(m_context.layout, plan); });
            }
            std::vector<PreviewResult> results =
                run_previews(m_context, m_candidate_options, changes, "keep-going: probing removals in private views");
            for (std::size_t i = 0; i < sets.size(); ++i) {
                const PreviewResult& result = results[i];
                Trial trial{sets[i], !result.failure && result.probe && result.probe->passed,
                            result.failure ? *result.failure : result.probe ? result.probe->error.value_or("") : ""};
                if (trial.passed) {
                    m_previewed[sets[i]] = *result.probe;
                }
                trials.push_back(trial);
            }
        } else {
            for (const auto& set : sets) {
                TransactionPlan plan = removal_transaction(plan_for(set));
                plan.trial = true;
                Outcome outcome = run_transaction(m_context, m_candidate_options, m_store, std::move(plan));
                if (outcome.tx) {
                    m_attempts.push_back(outcome.tx->id);
                }
                trials.push_back({set, outcome.code == ExitCode::ok, outcome.tx ? probe_error(outcome.tx->probe) : ""});
            }
        }
        m_probes += static_cast<int>(sets.size());
        return trials;
    }

    // The chosen subset, once, on the live venv: with the probe its preview passed, or probed
    // again in place.
    Outcome apply(const std::vector<std::string>& names) {
        std::vector<std::string> key = names;
        std::sort(key.begin(), key.end());
        TransactionPlan plan = removal_transaction(plan_for(names));
        MutationOptions options = m_options.mutation;
        auto previewed = m_previewed.find(key);
        if (previewed != m_previewed.end()) {
            plan.previewed = previewed->second;
            plan.baseline = m_baseline;
            plan.preview = {{"used", true}};
            say_baseline();
        } else {
            options = m_candidate_options;
            ++m_probes;
        }
        return run_transaction(m_context, options, m_store, std::move(plan));
    }

    void say_baseline() {
        if (m_baseline && !m_baseline_said) {
            say_probe(m_context.out, "baseline probe", *m_baseline);
            m_baseline_said = true;
        }
    }

    RemovalPlan plan_for(const std::vector<std::string>& names) const {
        return plan_removal(m_context.layout, m_planned.inventory, names, m_context.store_root);
    }

    std::size_t jobs() const {
        return m_options.jobs > 0 ? m_options.jobs : 4;
    }

    Outcome report(Outcome outcome, const std::vector<std::string>& removed) {
        nlohmann::json removed_json = nlohmann::json::array();
        nlohmann::json kept_json = nlohmann::json::array();
        std::string how = m_previewing ? " in private views, up to " + std::to_string(jobs()) + " at a time"
                                       : " in place, one at a time";
        m_context.out.say("keep-going: " + counted(m_probes, "probe") + " run" + how +
                          (m_search.exact ? "" : " (more than 8 interacting distributions: searched greedily)"));
        for (const auto& name : removed) {
            std::vector<std::string> copies = system_copies(m_expected, name, removed);
            m_context.out.say("  removed " + name +
                              (copies.empty() ? "" : ": its libraries now come from the system: " + joined(copies)));
            removed_json.push_back({{"name", name}, {"system_copies", copies}});
        }
        for (const auto& [name, reason] : m_refused) {
            m_context.out.verdict("  kept " + name + ": " + reason);
            kept_json.push_back({{"name", name}, {"reason", reason}, {"probe_error", nullptr},
                                 {"removed_with", nlohmann::json::array()}});
        }
        for (const auto& [name, proof] : m_search.kept) {
            std::vector<std::string> others;
            for (const auto& other : proof.removed) {
                if (other != name) {
                    others.push_back(other);
                }
            }
            std::string reason = std::string("with it removed") + (others.empty() ? "" : " together with " + joined(others)) +
                                 ", the probe failed: " + proof.error;
            m_context.out.verdict("  kept " + name + ": " + reason);
            kept_json.push_back({{"name", name}, {"reason", reason}, {"probe_error", proof.error}, {"removed_with", others}});
        }
        nlohmann::json trials = nlohmann::json::array();
        for (const auto& trial : m_search.trials) {
            trials.push_back({{"removed", trial.removed}, {"passed", trial.passed}, {"error", trial.error}});
        }
        nlohmann::json attempts = nlohmann::json::array();
        for (std::int64_t id : m_attempts) {
            if (!outcome.tx || id != outcome.tx->id) {
                attempts.push_back(id);
            }
        }
        nlohmann::json search = {{"removed", removed_json}, {"kept", kept_json}, {"probes", m_probes},
                                 {"exact", m_search.exact}, {"previewed", m_previewing}, {"trials", trials},
                                 {"attempts", attempts}};
        if (outcome.tx) { // one transaction holds the whole search; its attempts point to it
            History& history = m_store.history();
            history.add_details(outcome.tx->id, {{"keep_going", search}});
            for (const auto& id : attempts) {
                history.add_details(id.get<std::int64_t>(), {{"part_of", outcome.tx->id}});
            }
            outcome.tx = history.find(outcome.tx->id);
        }
        return outcome;
    }

    const Context& m_context;
    const RemoveOptions& m_options;
    Store& m_store;
    const PlannedRemoval& m_planned;
    Expectations m_expected;
    bool m_previewing = false;
    std::optional<ProbeReport> m_baseline;
    bool m_baseline_said = false;
    MutationOptions m_candidate_options;
    Trial m_whole;
    SubsetSearch m_search;
    std::map<std::vector<std::string>, ProbeReport> m_previewed;  // passing previews, by sorted set
    std::map<std::string, std::string> m_refused;                  // kept by --no-system-fallback
    std::vector<std::int64_t> m_attempts;  // transactions the search recorded on its way (restored or aborted)
    struct WholePreview {
        std::vector<PackageChange> packages;
        PreviewResult result;
    };
    std::optional<WholePreview> m_whole_preview;  // the whole set failed in a view: not recorded yet
    int m_probes = 0;
};

} // namespace

Outcome remove_keep_going(const Context& context, const RemoveOptions& options, Store& store,
                          const PlannedRemoval& planned) {
    if (options.mutation.probe.code.empty()) {
        throw usage_error("--keep-going needs --probe CODE: it searches for what the probe tolerates");
    }
    return KeepGoing(context, options, store, planned).run();
}

} // namespace venvtx
