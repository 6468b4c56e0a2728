// Preview: a change made first in a private overlay view of the venv (preview/overlay_view.hpp)
// and probed there, while the baseline probe runs against the live venv at the same time. Only
// a change whose probe passed reaches the live venv; a failing one is discarded with its layer,
// and the live venv never saw it.
#pragma once

#include "venvtx/capture/live_scan.hpp"
#include "venvtx/preview/overlay_view.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/txn/engine.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace venvtx {

// "auto", "always" or "never"; anything else is a usage Error.
PreviewMode preview_mode_from(const std::string& text);

struct PreviewResult {
    bool used = false;                      // the change ran in a private view
    std::string reason;                     // why not, when it did not
    std::optional<ProbeReport> baseline;    // the live venv, probed alongside
    std::optional<ProbeReport> probe;       // the previewed change
    std::optional<std::string> failure;     // the change itself failed in the view (no probe ran)
    nlohmann::json change;                  // what the change reported from the view
    std::filesystem::path layer;            // the view's upper layer, while the preview lasts

    bool baseline_failed() const { return baseline && !baseline->passed; }
    bool probe_failed() const { return probe && !probe->passed; }
    nlohmann::json json() const;            // {"used": true} or {"used": false, "reason": ...}
};

// Why this change gets no preview ("" when it should try one): --preview never, or auto without
// a probe to run. A `watched` command (install, run) is previewed by auto with a probe or
// without: the view is its capture, which sees every path the command takes.
std::string preview_skipped(const MutationOptions& options, bool watched = false);

// Runs the baseline probe (unless --no-baseline) against the live venv and, at the same time,
// `change` and then the probe in a private view whose layer is `area`. When the system refuses
// the view, only the baseline ran and `used` is false; under --preview always that is a usage
// Error (nothing changed). `progress_label` names the wait on the progress line; empty for a
// change that prints on the terminal itself (an installer's output is never overprinted).
PreviewResult run_preview(const Context& context, const MutationOptions& options, const PreviewArea& area,
                          const std::function<nlohmann::json()>& change, const std::string& progress_label);

// Several changes previewed side by side, each in its own view, with no baseline (a search ran
// it once, first): for the candidates of a --keep-going search. In the order of `changes`.
std::vector<PreviewResult> run_previews(const Context& context, const MutationOptions& options,
                                        const std::vector<std::function<nlohmann::json()>>& changes,
                                        const std::string& progress_label);

// A what-if (--dry-run in a private view): `change` made, and probed when there is a probe, in a
// view whose layer is in a temporary directory; nothing is applied or recorded. `plan_of` turns
// what the change reported from the view (null when it did not run there) into the plan. Says
// how it went ("the removal would pass the probe"); the outcome carries the plan and the
// what-if's probes and verdict. Exit 0 when the probe would pass (or the change would fix a
// venv that fails it now), 3 when it would fail, 4 when the venv fails it now and still would.
Outcome run_what_if(const Context& context, const MutationOptions& options, const std::string& what,
                    const std::function<nlohmann::json()>& change,
                    const std::function<nlohmann::json(const nlohmann::json&)>& plan_of,
                    const std::string& progress_label);

// Records a previewed change that failed in the view (its probe, or the command itself): a
// transaction aborted with nothing applied, its probes kept. Returns its id.
// `live_verdict` says what became of the live venv ("the live venv was never changed").
std::int64_t record_failed_preview(const Context& context, Store& store, const std::string& kind,
                                   const std::vector<PackageChange>& packages, const PreviewResult& preview,
                                   const std::string& live_verdict = "the live venv was never changed");

// A change that can be previewed: made inside the view by `in_view`, and as a live transaction
// by `plan` (given the preview's result: from its layer when it was used, in place otherwise).
struct PreviewedChange {
    std::string kind;
    bool watched = false;  // a command venvtx runs with --capture auto (see preview_skipped)
    std::function<nlohmann::json()> in_view;
    std::function<TransactionPlan(const PreviewResult&)> plan;
    std::string progress_label;  // see run_preview
    // What the command changed in the live venv all the same (a second path to it, a hard link
    // from outside): asked when the view fails, so the verdict never says "never changed" then.
    std::function<std::vector<LiveChange>()> changed_live;
    // Fills the view's upper layer before the view is entered (a rollback's after-state, read
    // from the store, which the view hides).
    std::function<void(const PreviewArea&)> prepare;
    // A pass is applied from the layer (a command's files, renamed into place); false: from the
    // plan's own sources (a rollback's store, zero-copy).
    bool apply_from_layer = true;
};

// The whole flow: preview and baseline side by side; a failure in the view is recorded with
// nothing applied (exit 3, or the command's own error); a pass is applied to the live venv as
// one journaled transaction with the probes it already has. Without a view, in place.
Outcome run_previewed(const Context& context, const MutationOptions& options, Store& store,
                      const PreviewedChange& change);

// The venv-relative paths a view hides and a layer never changes: .lock and a store inside the venv.
std::set<std::string> hidden_from_preview(const Context& context);

} // namespace venvtx
