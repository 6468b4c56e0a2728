// run_transaction: the one path every mutation takes.
#include "venvtx/txn/engine.hpp"

#include "venvtx/capture/capture.hpp"
#include "venvtx/capture/pending_check.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/mount_table.hpp"
#include "venvtx/core/progress.hpp"
#include "venvtx/core/subprocess.hpp"
#include "venvtx/report/probe_text.hpp"
#include "venvtx/store/object_keys.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/space_reserve.hpp"
#include "venvtx/txn/materialize.hpp"
#include "venvtx/txn/switching.hpp"
#include "venvtx/venv/own_distribution.hpp"

#include <algorithm>
#include <set>

namespace venvtx {

namespace {

std::string plural(std::size_t count, const char* noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

class TransactionRun {
public:
    TransactionRun(const Context& context, const MutationOptions& options, Store& store,
                   TransactionPlan plan)
        : m_context(context), m_options(options), m_store(store), m_plan(std::move(plan)) {}

    Outcome run() {
        refuse_mounted_entries();
        if (!m_options.force) {
            m_own = own_distribution(m_context.layout, m_context.store_root);
        }
        if (m_own && !m_plan.apply) { // what changes is known before anything does
            refuse_changing_own_distribution(*m_own, entry_paths(), "this " + m_plan.kind);
        }
        History& history = m_store.history();
        std::optional<ProbeReport> baseline;
        bool probing = !m_options.probe.code.empty();
        if (probing && !m_options.no_baseline) {
            baseline = m_plan.baseline ? *m_plan.baseline
                                       : run_probe(m_context.layout, m_options.probe,
                                                   expected_gpu_count(m_options.probe, nullptr));
            if (forwarded_interrupt() != 0) { // Ctrl-C ended the probe: the venv was not judged
                return abort_unchanged(*baseline, ExitCode::interrupted, "interrupted during the baseline probe");
            }
            if (!m_plan.previewed) { // a preview said it already
                say_probe(m_context.out, "baseline probe", *baseline);
            }
            if (!baseline->passed && m_plan.needs_passing_baseline) {
                return abort_unchanged(*baseline, ExitCode::baseline_failed,
                                       "the venv already fails the probe, and --keep-going looks for what it "
                                       "tolerates: make it pass first (venvtx rollback --probe ...)");
            }
            if (!baseline->passed && !m_plan.previewed) {
                m_context.out.say("the venv fails the probe now: making the change; the probe after it decides");
            }
        }
        if (!m_plan.apply) {
            // Packed objects come back as loose ones first (hashed on the way), then move into
            // place: the pack keeps them.
            m_unpacked = unpack_objects(m_store, objects_needed(m_plan.entries, Side::after), PackReading::strict);
            MaterializeSources sources = after_sources();
            sources.trusted = m_unpacked; // hashed on their way out of the pack
            std::set<std::string> unchanged = unchanged_objects(m_store, objects_needed(m_plan.entries, Side::after));
            sources.trusted.insert(unchanged.begin(), unchanged.end());
            sources.trusted.insert(m_plan.hashed.begin(), m_plan.hashed.end());
            verify_needed_objects(m_store.objects(), m_plan.entries, Side::after, sources);
            check_pending_sources();
        }
        {
            Progress::Phase phase("journaling");
            m_tx = history.begin(m_plan.kind, m_context.argv, m_plan.packages, m_plan.entries, m_plan.undoes,
                                 m_plan.details);
        }
        if (baseline) {
            history.set_probe(m_tx, "baseline", probe_report_json(*baseline));
        }
        record_preview(m_tx);
        apply();
        if (m_plan.entries.empty() && m_plan.unrestorable.empty() && m_plan.packages.empty()) {
            return record_nothing(baseline);
        }
        try {
            if (m_own && m_plan.apply) { // known only now that the command ran: it is put back
                refuse_changing_own_distribution(*m_own, entry_paths(), "this " + m_plan.kind);
            }
            return probe_and_commit(probing, baseline);
        } catch (const Error& error) {
            if (m_restored) {
                throw;
            }
            restore(error.what());
            history.set_state(m_tx, TxState::aborted, error.what());
            throw Error(error.code(), error.kind(),
                        std::string(error.what()) + " (" + restore_verdict() + ", tx " + std::to_string(m_tx) +
                            " aborted)",
                        error.details());
        }
    }

private:
    std::vector<std::string> entry_paths() const {
        std::vector<std::string> paths;
        for (const auto& entry : m_plan.entries) {
            paths.push_back(entry.path);
        }
        return paths;
    }

    // Before anything changed: recorded as aborted, with the baseline's report and `why`.
    Outcome abort_unchanged(const ProbeReport& baseline, ExitCode code, const std::string& why) {
        History& history = m_store.history();
        std::int64_t id = history.record_aborted(m_plan.kind, m_context.argv, m_plan.packages,
                                                 probe_report_json(baseline), why + "; nothing changed");
        record_preview(id);
        m_context.out.verdict("nothing changed: " + why + " (tx " + std::to_string(id) + " aborted)");
        return {code, history.find(id)};
    }

    // The command changed no path: no transaction is kept (a history of real changes only).
    Outcome record_nothing(const std::optional<ProbeReport>& baseline) {
        m_store.history().discard_empty(m_tx);
        remove_staging();
        bool failing = baseline && !baseline->passed;
        m_context.out.verdict(std::string("nothing changed: it changed no file in the venv, so no transaction was "
                                          "recorded") +
                              (failing ? "; the venv still fails the probe" : ""));
        return {failing ? ExitCode::baseline_failed : ExitCode::ok, std::nullopt};
    }

    // Said only after the restore was checked path by path.
    std::string restore_verdict() const {
        if (m_unrestored.empty()) {
            return "restored the " + plural(m_plan.restore ? m_journaled : m_plan.entries.size(), "path") +
                   " it changed: the venv is as it was before" +
                   (m_probed_live ? ", but for anything the probe wrote itself (it ran on the live venv)" : "");
        }
        std::string text = "NOT restored: " + plural(m_unrestored.size(), "path") +
                           (m_unrestored.size() == 1 ? " is" : " are") + " not as before:";
        for (std::size_t i = 0; i < m_unrestored.size() && i < 5; ++i) {
            text += " " + m_unrestored[i];
        }
        return text + (m_unrestored.size() > 5 ? " ..." : "") +
               (m_plan.unrestorable.empty() ? "" : " (changed in place without a pre-image)");
    }

    Outcome probe_and_commit(bool probing, const std::optional<ProbeReport>& baseline) {
        History& history = m_store.history();
        if (m_plan.previewed) {
            history.set_probe(m_tx, "probe", probe_report_json(*m_plan.previewed));
        }
        if (probing && (!m_plan.previewed || m_options.probe_live)) {
            m_probed_live = true;
            ProbeReport after = run_probe(m_context.layout, m_options.probe,
                                          expected_gpu_count(m_options.probe, baseline ? &*baseline : nullptr));
            history.set_probe(m_tx, m_plan.previewed ? "live_probe" : "probe", probe_report_json(after));
            say_probe(m_context.out, m_plan.previewed ? "live probe" : "probe", after);
            if (forwarded_interrupt() != 0) { // Ctrl-C: back to the state before, whatever the probe said
                restore("interrupted");
                history.set_state(m_tx, TxState::rolled_back, "interrupted during the probe");
                m_context.out.verdict(restore_verdict() + " (tx " + std::to_string(m_tx) +
                                      " rolled back: interrupted during the probe)");
                return {ExitCode::interrupted, history.find(m_tx)};
            }
            if (m_plan.trial) {
                restore("trial");
                history.set_state(m_tx, TxState::rolled_back,
                                  after.passed ? "keep-going trial: the probe passed"
                                               : "keep-going trial: the probe failed: " + after.error.value_or(""));
                return {after.passed ? ExitCode::ok : ExitCode::probe_failed, history.find(m_tx)};
            }
            if (!after.passed) {
                bool failed_before = baseline && !baseline->passed;
                restore("probe failed");
                if (failed_before) {
                    history.add_details(m_tx, {{"repair", "still_failing"}});
                }
                history.set_state(m_tx, TxState::rolled_back,
                                  std::string(failed_before ? "the venv failed the probe before the change and still "
                                                              "fails it after: "
                                                            : "probe failed: ") +
                                      after.error.value_or(""));
                m_context.out.verdict(restore_verdict() + " (tx " + std::to_string(m_tx) + " rolled back" +
                                      (failed_before ? "; the venv failed the probe before the change too)" : ")"));
                if (auto fault = failed_before ? probe_at_fault(*baseline, after) : std::nullopt) {
                    history.add_details(m_tx, {{"probe_at_fault", *fault}});
                    m_context.out.verdict(*fault);
                }
                return {failed_before ? ExitCode::baseline_failed : ExitCode::probe_failed, history.find(m_tx)};
            }
        }
        if (probing && baseline && !baseline->passed) {
            history.add_details(m_tx, {{"repair", "fixed"}});
            m_context.out.verdict("the change fixed the probe: the venv failed it before, and passes it now");
        }
        {
            Progress::Phase phase("committing");
            history.commit(m_tx, m_plan.undoes, m_moved_out, m_plan.undoes_too);
            remove_staging();
            if (!m_plan.pending.empty()) {
                remove_staging(*m_plan.undoes); // emptied by the rename back
            }
        }
        return {ExitCode::ok, history.find(m_tx)};
    }

    void apply() {
        try {
            if (m_plan.apply) {
                m_plan.apply(m_tx, m_plan, m_new_objects);
            } else {
                CaptureHashing hashing = m_plan.kind == "remove" ? CaptureHashing::deferred : CaptureHashing::now;
                auto capture = [&](const Relocation& relocation) {
                    CaptureResult captured = capture_by_rename(m_context.layout, m_store.objects(), m_store.history(),
                                                               m_tx, m_plan.entries, hashing, m_plan.hints, relocation);
                    for (const auto& object : captured.new_objects) {
                        m_new_objects.insert(object.first);
                    }
                    m_store.history().save_entries(m_tx, m_plan.entries, captured.new_objects, captured.pending);
                    record_object_keys(m_store, adopt_captured(m_store.objects(), m_tx, m_plan.entries));
                };
                SwitchedResult switched = switch_into_place(m_context.layout, m_store, m_tx, k_apply_phase,
                                                            m_plan.entries, Side::after, after_sources(), capture);
                say_switching(switched);
                const MaterializeResult& applied = switched.placed;
                for (const auto& hex : applied.moved) {
                    if (m_unpacked.count(hex) == 0) {
                        m_moved_out.push_back(hex); // its pack keeps an unpacked one
                    }
                }
                if (!applied.unrestored.empty()) {
                    throw Error(ExitCode::internal, "could not bring " + applied.unrestored.front() +
                                                        " to its new state" +
                                                        (applied.unrestored.size() > 1 ? " (and others)" : ""));
                }
            }
            m_store.history().set_state(m_tx, TxState::applied);
        } catch (const Error& error) {
            restore(error.what());
            m_store.history().set_state(m_tx, TxState::aborted, error.what());
            throw Error(error.code(), std::string(error.what()) + " (" + restore_verdict() + ", tx " +
                                          std::to_string(m_tx) + " aborted)");
        }
    }

    // Puts every path back as it was; on failure marks the transaction for `venvtx recover`.
    void restore(const std::string& reason) {
        m_restored = true;
        release_reserve(m_store.root()); // the room to record the restore, if the store's disk filled
        try {
            if (m_plan.restore) {
                m_unrestored = m_plan.restore(m_tx);
                m_journaled = m_store.history().entries(m_tx).size(); // a command's, journaled as it ran
            } else {
                MaterializeSources sources;
                sources.staging_tx = m_tx;
                sources.movable = m_new_objects;
                sources.returnable = m_plan.movable;
                // A rollback's: what it renamed in goes back to the removal's staging. Otherwise
                // this removal's own: a file already back from staging is known by its inode.
                bool own = m_plan.pending.empty();
                sources.pending = own ? pending_sources_of(m_store, m_tx) : m_plan.pending;
                // A packed before-image whose loose copy a movable after-state took: out of its pack again.
                unpack_objects(m_store, objects_needed(m_plan.entries, Side::before), PackReading::tolerant);
                settle_switches(m_context.layout, m_store, m_tx); // an apply that stopped halfway
                SwitchedResult switched = switch_into_place(m_context.layout, m_store, m_tx, k_restore_phase,
                                                            m_plan.entries, Side::before, sources,
                                                            [](const Relocation&) {});
                say_switching(switched);
                const MaterializeResult& result = switched.placed;
                m_store.history().forget_objects(result.moved);
                m_unrestored = result.unrestored;
                if (own) {
                    forget_restored(m_store, sources.pending, m_unrestored);
                } else {
                    rekey_returned(m_store, m_plan.pending, result.returned_pending);
                }
            }
            for (const auto& path : m_plan.unrestorable) {
                if (std::find(m_unrestored.begin(), m_unrestored.end(), path) == m_unrestored.end()) {
                    m_unrestored.push_back(path);
                }
            }
            m_store.history().set_restored(m_tx, m_unrestored);
            remove_staging();
        } catch (const Error& error) {
            m_store.history().set_state(m_tx, TxState::interrupted, reason + "; restore failed: " + error.what());
            throw Error(ExitCode::internal, "restore after '" + reason + "' failed: " + error.what() +
                                                "; run `venvtx recover`");
        }
    }

    // -v says how the change reached the venv; a unit's old version kept because someone wrote
    // into it meanwhile is said aloud.
    void say_switching(const SwitchedResult& switched) const {
        if (!switched.per_path.empty()) {
            m_context.out.debug("path by path: " + switched.per_path);
            m_store.history().add_details(m_tx, {{"switching", {{"per_path", switched.per_path}}}});
        } else if (switched.units > 0) {
            m_context.out.debug("switched " + plural(switched.units, "unit") + " at once");
        }
        for (const auto& left : switched.left) {
            m_context.out.warn("kept " + left + ": written into the venv while its package was being switched");
        }
    }

    void record_preview(std::int64_t id) {
        if (!m_plan.preview.is_null()) {
            m_store.history().set_probe(id, "preview", m_plan.preview);
        }
    }

    MaterializeSources after_sources() const {
        MaterializeSources sources;
        sources.layer = m_plan.layer;
        sources.pending = m_plan.pending;
        // Unpacked objects move into place, except those a restore of this transaction would
        // put back too (an identical file at another path): those are copied.
        std::set<std::string> before = objects_needed(m_plan.entries, Side::before);
        // A rollback's only copies move only when no probe runs on the live venv afterwards: a
        // probe could change them in place, and a failed one would leave nothing to restore.
        bool live_probe = !m_options.probe.code.empty() && (!m_plan.previewed || m_options.probe_live);
        std::set<std::string> candidates = m_unpacked;
        if (!live_probe) {
            candidates.insert(m_plan.movable.begin(), m_plan.movable.end());
        }
        for (const auto& hex : candidates) {
            if (before.count(hex) == 0) {
                sources.movable.insert(hex);
            }
        }
        return sources;
    }

    // A pending capture's staged file must still be the inode the removal staged: a file
    // changed or replaced in the store is never put back as if it were the captured one.
    // Those that pass on another key (a copied store) get it recorded before anything moves: a
    // restore of this rollback knows them by it.
    // With --force, a staged file that is still there but holds other bytes (it was edited
    // before the removal without a change of size, so RECORD's hash was not its own, and a
    // chmod -R or chown -R since moved its key) is put back as it is now, said aloud.
    // What a mount below the venv brings in lives on another filesystem, outside the venv: a
    // capture would copy it and unlink the original there.
    void refuse_mounted_entries() const {
        std::vector<std::filesystem::path> mounts = mounts_below(m_context.layout.root, m_context.store_root);
        for (const auto& entry : m_plan.entries) {
            std::filesystem::path path = m_context.layout.root / entry.path;
            for (const auto& mounted : mounts) {
                if (is_within(path, mounted)) {
                    throw usage_error(entry.path + " is on a filesystem mounted at " + mounted.string() +
                                      " below the venv: venvtx changes only the venv's own files (unmount "
                                      "it first); nothing was changed");
                }
            }
        }
    }

    void check_pending_sources() {
        PendingCheck checked = check_pending(m_plan.pending);
        for (const auto& path : checked.unintact) {
            const std::string& staged = m_plan.pending.at(path).staged.string();
            if (checked.changed.count(path) == 0) {
                throw Error(ExitCode::verify_failed, "the stored copy of " + path + " (" + staged +
                                                         ") is gone: nothing was changed");
            }
            if (!m_options.force) {
                throw Error(ExitCode::verify_failed,
                            "the stored copy of " + path + " (" + staged + ") does not match the hash " +
                                "recorded at its removal: nothing was changed (`--force` puts back " +
                                counted(checked.changed.size(), "such file") + " as they are now)");
            }
        }
        retake_changed(m_context.out, m_store, m_plan.pending, checked);
        rekey_pending(m_store, m_plan.pending, checked.rekeyed);
    }

    void remove_staging() { remove_staging(m_tx); }

    void remove_staging(std::int64_t tx) {
        try {
            Fs::instance().rmdir(m_store.objects().staging_dir(tx));
        } catch (const FsError&) {
            // Already gone, or still holding files a later `gc` will deal with.
        }
    }

    const Context& m_context;
    const MutationOptions& m_options;
    Store& m_store;
    TransactionPlan m_plan;
    std::int64_t m_tx = 0;
    std::set<std::string> m_new_objects;
    std::set<std::string> m_unpacked;  // taken out of packs for this transaction: movable into place
    std::vector<std::string> m_moved_out;  // loose objects the apply moved into the venv
    std::optional<OwnDistribution> m_own;  // the running venvtx's, when it lives in this venv (no --force)
    bool m_restored = false;  // a restore ran (or failed): never attempted twice
    std::size_t m_journaled = 0;  // the paths a command's restore put back
    bool m_probed_live = false;  // a probe ran on the live venv: what it wrote itself is not journaled
    std::vector<std::string> m_unrestored;  // what the checked restore could not bring back
};

} // namespace

Outcome run_transaction(const Context& context, const MutationOptions& options, Store& store,
                        TransactionPlan plan) {
    return TransactionRun(context, options, store, std::move(plan)).run();
}

} // namespace venvtx
