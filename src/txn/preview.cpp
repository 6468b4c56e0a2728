// run_preview: the baseline and the previewed change, each in a worker, at the same time.
#include "venvtx/txn/preview.hpp"

#include "venvtx/core/choice.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/core/worker.hpp"
#include "venvtx/preview/renamed_dirs.hpp"
#include "venvtx/report/outside_text.hpp"
#include "venvtx/report/probe_text.hpp"

#include <memory>

namespace venvtx {

namespace {

// A worker's body: its result, or the Error it threw with its exit code.
std::string reported(const std::function<nlohmann::json()>& body) {
    nlohmann::json report;
    try {
        report["result"] = body();
    } catch (const Error& error) {
        report["error"] = error.what();
        report["code"] = static_cast<int>(error.code());
    }
    std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(report); // CBOR: any bytes, not only UTF-8
    return std::string(bytes.begin(), bytes.end());
}

// Ctrl-C (or SIGTERM, SIGHUP) went to the workers: whatever they report judged nothing.
class PreviewInterrupted : public Error {
public:
    PreviewInterrupted()
        : Error(ExitCode::interrupted, "interrupted", "interrupted during the preview: the live venv was never changed",
                nlohmann::json::object()) {}
};

void check_interrupt() {
    if (forwarded_interrupt() != 0) {
        throw PreviewInterrupted();
    }
}

nlohmann::json result_of(Worker& worker, const char* what) {
    Worker::Result done = worker.wait();
    check_interrupt();
    if (!done.ok) {
        throw Error(ExitCode::internal, std::string(what) + " failed: " + done.text);
    }
    nlohmann::json report = nlohmann::json::from_cbor(done.text);
    if (report.contains("error")) {
        throw Error(static_cast<ExitCode>(report["code"].get<int>()), report["error"].get<std::string>());
    }
    return report["result"];
}

std::optional<int> exact_gpus(const ProbeSettings& settings) {
    return expected_gpu_count(settings, nullptr);
}

} // namespace

PreviewMode preview_mode_from(const std::string& text) {
    return choice_from<PreviewMode>("--preview", text,
                                    {{"auto", PreviewMode::automatic}, {"always", PreviewMode::always},
                                     {"never", PreviewMode::never}});
}

nlohmann::json PreviewResult::json() const {
    nlohmann::json document = {{"used", used}};
    if (!used) {
        document["reason"] = reason;
    }
    return document;
}

std::string preview_skipped(const MutationOptions& options, bool watched) {
    if (options.preview == PreviewMode::never) {
        return "--preview never";
    }
    if (options.preview == PreviewMode::automatic && options.probe.code.empty() && !watched) {
        return "no probe to run on a preview";
    }
    return "";
}

std::set<std::string> hidden_from_preview(const Context& context) {
    std::set<std::string> hidden = {".lock"};
    std::filesystem::path store = context.store_root.lexically_relative(context.layout.root);
    if (!store.empty() && *store.begin() != "..") {
        hidden.insert(store.string());
    }
    return hidden;
}

namespace {

// The view's worker: enter it, make the change, probe.
std::unique_ptr<Worker> start_view(const Context& context, const MutationOptions& options, const PreviewArea& area,
                                   const std::function<nlohmann::json()>& change) {
    return std::make_unique<Worker>([&context, &options, &area, &change] {
        return reported([&] {
            nlohmann::json inside;
            try {
                enter_overlay_view(area, context.layout.root, context.store_root);
            } catch (const PreviewUnavailable& refused) {
                inside["unavailable"] = refused.what();
                return inside;
            }
            try {
                inside["change"] = change();
            } catch (const Error& error) {
                inside["failure"] = error.what();
                return inside;
            }
            if (!options.probe.code.empty()) {
                inside["probe"] = probe_report_json(run_probe(context.layout, options.probe, exact_gpus(options.probe)));
            }
            return inside;
        });
    });
}

void read_view(const Context& context, const MutationOptions& options, Worker& view, PreviewResult& result) {
    nlohmann::json inside = result_of(view, "the preview");
    if (inside.contains("unavailable")) {
        result.reason = "no private view: " + inside["unavailable"].get<std::string>();
        if (options.preview == PreviewMode::always) {
            throw usage_error("--preview always, but " + result.reason + " (nothing was changed)");
        }
        context.out.debug("preview not used (" + result.reason + "): changing the venv in place");
        return;
    }
    result.used = true;
    if (inside.contains("failure")) {
        result.failure = inside["failure"].get<std::string>();
        return;
    }
    result.change = inside.value("change", nlohmann::json());
    if (inside.contains("probe")) {
        result.probe = probe_report_from_json(inside["probe"]);
        judge_gpus(*result.probe, expected_gpu_count(options.probe, result.baseline ? &*result.baseline : nullptr));
    }
}

} // namespace

PreviewResult run_preview(const Context& context, const MutationOptions& options, const PreviewArea& area,
                          const std::function<nlohmann::json()>& change, const std::string& progress_label) {
    std::optional<Progress::Phase> phase;
    if (!progress_label.empty()) {
        phase.emplace(progress_label);
    }
    std::optional<Worker> baseline;
    if (!options.probe.code.empty() && !options.no_baseline) {
        baseline.emplace([&] {
            return reported([&] {
                return probe_report_json(run_probe(context.layout, options.probe, exact_gpus(options.probe)));
            });
        });
    }
    std::unique_ptr<Worker> view = start_view(context, options, area, change);
    PreviewResult result;
    result.layer = area.upper();
    if (baseline) {
        // A failing baseline stops nothing: the probe in the view decides (a repair may pass it).
        result.baseline = probe_report_from_json(result_of(*baseline, "the baseline probe"));
    }
    read_view(context, options, *view, result);
    check_interrupt();
    return result;
}

std::vector<PreviewResult> run_previews(const Context& context, const MutationOptions& options,
                                        const std::vector<std::function<nlohmann::json()>>& changes,
                                        const std::string& progress_label) {
    Progress::Phase phase(progress_label, changes.size(), changes.size() == 1 ? "view" : "views");
    std::vector<std::unique_ptr<PreviewArea>> areas;
    std::vector<std::unique_ptr<Worker>> views;
    for (const auto& change : changes) {
        areas.push_back(std::make_unique<PreviewArea>(context.store_root));
        views.push_back(start_view(context, options, *areas.back(), change));
    }
    std::vector<PreviewResult> results(changes.size());
    for (std::size_t i = 0; i < views.size(); ++i) {
        read_view(context, options, *views[i], results[i]);
        Progress::advance(1);
    }
    check_interrupt();
    return results;
}

Outcome run_what_if(const Context& context, const MutationOptions& options, const std::string& what,
                    const std::function<nlohmann::json()>& change,
                    const std::function<nlohmann::json(const nlohmann::json&)>& plan_of,
                    const std::string& progress_label) {
    PreviewArea area(std::nullopt); // a private directory: a what-if writes nothing to the store
    PreviewResult preview = run_preview(context, options, area, change, progress_label);
    nlohmann::json document = {{"preview", preview.json()}, {"baseline", nullptr}, {"probe", nullptr},
                               {"failure", nullptr}, {"passed", nullptr}, {"verdict", "not_probed"}};
    Outcome outcome{ExitCode::ok, std::nullopt};
    outcome.dry_run = true;
    outcome.plan = plan_of(preview.used && !preview.failure ? preview.change : nlohmann::json());
    if (preview.baseline) {
        say_probe(context.out, "baseline probe", *preview.baseline);
        document["baseline"] = probe_report_json(*preview.baseline);
    }
    bool failing_now = preview.baseline_failed();
    if (!preview.used) {
        context.out.say("what-if: not tried (" + preview.reason + "); nothing changed");
    } else if (preview.failure) {
        context.out.verdict("what-if: " + what + " failed in the preview: " + *preview.failure + "; nothing changed");
        document["failure"] = *preview.failure;
        document["verdict"] = "command_failed";
        outcome.code = ExitCode::usage;
    } else if (preview.probe) {
        say_probe(context.out, "probe (in a private view)", *preview.probe);
        document["probe"] = probe_report_json(*preview.probe);
        bool passes = preview.probe->passed;
        document["passed"] = passes;
        if (failing_now) { // a repair: the after-probe decides
            document["verdict"] = passes ? "fixes" : "still_failing";
            context.out.verdict("what-if: the venv fails the probe now; after " + what + " it would " +
                                (passes ? "pass (the change would fix it)" : "still fail") + "; nothing changed");
            outcome.code = passes ? ExitCode::ok : ExitCode::baseline_failed;
        } else {
            document["verdict"] = passes ? "passes" : "fails";
            context.out.say("what-if: " + what + " would " + (passes ? "pass" : "FAIL") + " the probe; nothing changed");
            outcome.code = passes ? ExitCode::ok : ExitCode::probe_failed;
        }
    } else {
        context.out.say("dry run: nothing changed");
    }
    outcome.what_if = std::move(document);
    return outcome;
}

std::int64_t record_failed_preview(const Context& context, Store& store, const std::string& kind,
                                   const std::vector<PackageChange>& packages, const PreviewResult& preview,
                                   const std::string& live_verdict) {
    History& history = store.history();
    std::string why = preview.failure ? *preview.failure
                                      : "probe failed in the preview: " + preview.probe->error.value_or("");
    std::int64_t id = history.record_aborted(kind, context.argv, packages,
                                             preview.baseline ? std::optional(probe_report_json(*preview.baseline)) : std::nullopt,
                                             why + "; " + live_verdict);
    if (preview.probe) {
        history.set_probe(id, "probe", probe_report_json(*preview.probe));
    }
    history.set_probe(id, "preview", preview.json());
    return id;
}

Outcome run_previewed(const Context& context, const MutationOptions& options, Store& store,
                      const PreviewedChange& change) {
    std::string skipped = preview_skipped(options, change.watched);
    if (!skipped.empty()) {
        PreviewResult none;
        none.reason = skipped;
        TransactionPlan plan = change.plan(none);
        if (!options.probe.code.empty()) {
            plan.preview = none.json();
        }
        return run_transaction(context, options, store, std::move(plan));
    }
    PreviewArea area(context.store_root);
    if (change.prepare) {
        change.prepare(area);
    }
    PreviewResult preview;
    try {
        preview = run_preview(context, options, area, change.in_view, change.progress_label);
    } catch (const PreviewInterrupted& interrupted) {
        std::int64_t id = store.history().record_aborted(change.kind, context.argv, {}, std::nullopt,
                                                         interrupted.what());
        throw Error(ExitCode::interrupted, "interrupted", std::string(interrupted.what()) + " (tx " +
                                                              std::to_string(id) + " aborted)", {{"tx", id}});
    }
    if (preview.used && !preview.failure && !preview.probe_failed()) {
        settle_renamed_dirs(area, context.layout.root); // before the layer is read
    }
    TransactionPlan plan = change.plan(preview);
    plan.preview = preview.json();
    plan.baseline = preview.baseline;
    if (!preview.used) {
        return run_transaction(context, options, store, std::move(plan)); // in place
    }
    if (preview.failure || preview.probe_failed()) {
        if (preview.baseline) {
            say_probe(context.out, "baseline probe", *preview.baseline);
        }
        if (preview.probe) {
            say_probe(context.out, "probe (in a private view)", *preview.probe);
        }
        std::vector<LiveChange> outside = change.changed_live ? change.changed_live() : std::vector<LiveChange>{};
        std::string live = outside.empty()
                               ? "the live venv was never changed"
                               : "the command changed the live venv outside its view, and venvtx cannot undo it "
                                 "(it kept no pre-image): " + outside_summary(outside);
        std::int64_t id = record_failed_preview(context, store, change.kind, plan.packages, preview, live);
        if (plan.details) {
            store.history().add_details(id, *plan.details); // what a rollback --to aimed at
        }
        std::string verdict = live + " (tx " + std::to_string(id) + " aborted)";
        if (preview.failure) {
            throw Error(ExitCode::usage, "command_failed", *preview.failure + " (" + verdict + ")", {{"tx", id}});
        }
        bool failed_before = preview.baseline_failed();
        std::optional<std::string> fault;
        if (failed_before) {
            store.history().add_details(id, {{"repair", "still_failing"}});
            verdict = "the venv failed the probe before the change too, and " + verdict;
            fault = preview.probe ? probe_at_fault(*preview.baseline, *preview.probe) : std::nullopt;
            if (fault) {
                store.history().add_details(id, {{"probe_at_fault", *fault}});
            }
        }
        context.out.verdict(verdict);
        if (fault) {
            context.out.verdict(*fault);
        }
        Outcome outcome{failed_before ? ExitCode::baseline_failed : ExitCode::probe_failed, store.history().find(id)};
        if (!outside.empty()) {
            outcome.extra["changed_outside"] = outside_json(outside);
        }
        return outcome;
    }
    if (preview.baseline) {
        say_probe(context.out, "baseline probe", *preview.baseline);
    }
    if (preview.probe) {
        say_probe(context.out, "probe (in a private view)", *preview.probe);
    }
    plan.previewed = preview.probe;
    if (change.apply_from_layer) {
        plan.layer = area.upper();
    }
    return run_transaction(context, options, store, std::move(plan));
}

} // namespace venvtx
