// txn/ is the engine: one transaction's life, materialize, recovery, the preview flow.
//
// One transaction, whatever its kind: baseline probe -> journal -> capture -> apply -> probe
// -> commit, or restore the exact before-state.
#pragma once

#include "venvtx/capture/capture.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/txn/materialize.hpp"

#include <functional>
#include <map>
#include <unordered_map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct TransactionPlan {
    std::string kind;
    std::vector<PackageChange> packages;
    std::vector<Entry> entries;  // before: the path as it is now; after: what it must become
    std::optional<std::int64_t> undoes;
    // Older transactions undone together with `undoes`, in this one transaction (rollback --to).
    std::vector<std::int64_t> undoes_too;
    // Recorded with the transaction (its `details`): what a rollback --to aimed at.
    std::optional<nlohmann::json> details;
    // Replaces the default apply (capture by rename, then write the after-states), e.g. to run
    // an installer. Called once the transaction is journaled; it must leave every pre-image
    // findable by a restore (in staging under its entry id, or as an object in `new_objects`)
    // and may add entries and package changes.
    std::function<void(std::int64_t tx, TransactionPlan& plan, std::set<std::string>& new_objects)> apply;
    // Replaces the default restore (materialize `entries` to their before-state), e.g. to undo
    // a command that failed halfway from what the journal holds. Returns the paths it could not
    // bring back (checked).
    std::function<std::vector<std::string>(std::int64_t tx)> restore;
    // Probes a preview already ran: the baseline (against the live venv) and the probe of this
    // very change in the view. Recorded, not run again (--probe-live probes the live venv too).
    std::optional<ProbeReport> baseline;
    std::optional<ProbeReport> previewed;
    nlohmann::json preview;  // PreviewResult::json(), recorded with the transaction when set
    // Probe only: restored even when the probe passes (a --keep-going search in place). Returns
    // exit code 0 for a pass, 3 for a failure; the transaction ends rolled back either way.
    bool trial = false;
    // A failing baseline aborts it (nothing changed, exit 4): for a --keep-going search, which
    // looks for what the probe tolerates. Any other change is made, and the probe after decides.
    bool needs_passing_baseline = false;
    // A preview's upper layer: the after-state's files wait there under their venv-relative
    // paths and are renamed into place (zero copy), then checked against their hashes.
    std::filesystem::path layer;
    // Paths the apply changed but kept no pre-image of (written in place): a restore cannot
    // bring them back, and says so.
    std::vector<std::string> unrestorable;
    // Loose objects only the undone transaction refers to (a rollback of a removal): moved into
    // place, not copied, and forgotten by the store once committed; a restore or `recover`
    // puts any it finds back under their object names.
    std::set<std::string> movable;
    // Objects the plan hashed just now, under the locks (holds adopted as objects): not hashed
    // again before use.
    std::set<std::string> hashed;
    // A rollback of a removal whose captures are pending: by venv path, the staged files that
    // are renamed into place (each checked by inode key before the journal is written).
    std::map<std::string, PendingSource> pending;
    // What a removal's capture knows without reading its files: RECORD's hashes, the files uv
    // installed (see capture/capture.hpp).
    CaptureHints hints;
};

// Runs `plan` against the venv. The store must be open and locked by the caller. Returns exit
// code 0 (committed), 3 (probe failed, restored) or 4 (baseline failed, nothing changed);
// throws Error on an internal failure after restoring (or marking the transaction interrupted).
// Retention is the operation's to run once this returns (upkeep/gc.hpp, retain_after).
Outcome run_transaction(const Context& context, const MutationOptions& options, Store& store,
                        TransactionPlan plan);

} // namespace venvtx
