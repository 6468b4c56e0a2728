// Recovery: finish an interrupted transaction by restoring its before-state.
#include "venvtx/txn/recover.hpp"

#include "venvtx/preview/overlay_view.hpp"

#include "venvtx/capture/command_capture.hpp"
#include "venvtx/capture/pending_check.hpp"
#include "venvtx/capture/settle.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/store/doomed_objects.hpp"
#include "venvtx/store/packs.hpp"
#include "venvtx/store/space_reserve.hpp"
#include "venvtx/txn/materialize.hpp"
#include "venvtx/txn/switching.hpp"

#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// A crash between writing a temporary and renaming it leaves it beside its target: a restore's,
// or the copy of a move across filesystems (a store placed elsewhere).
void remove_temporaries(const VenvLayout& layout, const std::vector<Entry>& entries) {
    for (const auto& entry : entries) {
        stdfs::path target = layout.root / entry.path;
        for (const auto& temporary : {temporary_path_for(target, entry.id), Fs::move_temporary(target)}) {
            if (observe_node(temporary).type != NodeType::absent) {
                Fs::instance().unlink(temporary);
            }
        }
    }
}

std::vector<std::string> recover_one(const Context& context, Store& store, const TransactionRecord& record) {
    std::vector<std::string> unrestored = restore_journaled(context, store, record.id, record.kind, false);
    store.history().set_restored(record.id, unrestored);
    store.history().set_state(record.id, TxState::rolled_back,
                              std::string("interrupted while ") + to_string(record.state) +
                                  (unrestored.empty() ? "; recovered to the state before it"
                                                      : "; recovered, but not as before: " +
                                                            counted(unrestored.size(), "path")));
    return unrestored;
}

} // namespace

std::vector<std::string> restore_journaled(const Context& context, Store& store, std::int64_t tx,
                                           const std::string& kind, bool switched) {
    History& history = store.history();
    std::vector<Entry> entries = history.entries(tx);
    MaterializeSources sources;
    sources.staging_tx = tx;
    std::vector<std::string> unstored;
    for (const auto& hex : history.objects_created_by(tx)) {
        sources.movable.insert(hex);
        if (!store.objects().has(hex)) {
            unstored.push_back(hex); // journaled, never adopted: its bytes are still in staging
        }
    }
    settle_switches(context.layout, store, tx);
    remove_temporaries(context.layout, entries);
    bool command = kind == "install" || kind == "run" || kind == "sync";
    std::vector<std::string> unknown;
    if (command) {
        // The capture strategy that journaled the command says what its journal lacks.
        bool linked = !entries.empty() && entries.front().progress == EntryProgress::snapshot;
        unknown = linked ? link_capture_recovery(context.layout, store.root(), entries)
                         : touch_capture_recovery(context.layout, store.root(), entries);
    }
    sources.owns_every_node = command;
    for (const auto& hex : objects_needed(entries, Side::after)) {
        if (history.has_object(hex) && !store.objects().has(hex)) {
            sources.returnable.insert(hex); // a rollback may have moved it into place
        }
    }
    std::optional<TransactionRecord> record = history.find(tx);
    // A rollback's: what it renamed in goes back to the removal's staging; a removal's own: a
    // file already back from staging is known by its inode.
    bool own = !record || !record->undoes;
    sources.pending = pending_sources_of(store, own ? tx : *record->undoes);
    // Left loose (recover may run again); a damaged pack only leaves its paths unrestored, named.
    unpack_objects(store, objects_needed(entries, Side::before), PackReading::tolerant);
    MaterializeResult result =
        switched ? switch_into_place(context.layout, store, tx, k_restore_phase, entries, Side::before, sources,
                                     [](const Relocation&) {})
                       .placed
                 : materialize(context.layout, store.objects(), entries, Side::before, sources);
    if (own) {
        forget_restored(store, sources.pending, result.unrestored);
    } else {
        rekey_returned(store, sources.pending, result.returned_pending);
    }
    if (result.unrestored.empty()) {
        result.moved.insert(result.moved.end(), unstored.begin(), unstored.end());
        Fs::instance().remove_tree(store.objects().staging_dir(tx));
    } // else staging keeps the pre-images that could not go back: nothing is deleted unplaced
    history.forget_objects(result.moved);
    result.unrestored.insert(result.unrestored.end(), unknown.begin(), unknown.end());
    return result.unrestored;
}

std::vector<std::int64_t> recover_interrupted(const Context& context, Store& store) {
    std::vector<std::int64_t> recovered;
    std::vector<TransactionRecord> unfinished = store.history().unfinished();
    if (!unfinished.empty()) {
        release_reserve(store.root()); // the room to record the recovery, if the store's disk filled
    }
    for (const auto& record : unfinished) {
        std::vector<std::string> unrestored = recover_one(context, store, record);
        recovered.push_back(record.id);
        std::string prefix = "recovered interrupted tx " + std::to_string(record.id) + " (" + record.kind + "): ";
        if (unrestored.empty()) {
            context.out.say(prefix + "the venv is back to its state before it");
        } else {
            context.out.verdict(prefix + "NOT restored: " + counted(unrestored.size(), "path") +
                                " not as before, e.g. " + unrestored.front());
        }
    }
    try { // garbage only: what stays is tried again next time
        finish_settling(store);       // files a killed settle indexed but did not move
        delete_doomed_objects(store); // what a killed gc dropped from the index but not from disk
        delete_dead_packs(store);     // and a pack it wrote but never indexed
        remove_unpack_leftovers(store);
        remove_stale_previews(store.root()); // after: an interrupted apply no longer needs its layer
    } catch (const FsError& error) {
        context.out.debug("leftovers stay for later: " + std::string(error.what()));
    }
    return recovered;
}

void recover_before_mutating(const Context& context, Store& store) {
    try {
        recover_interrupted(context, store);
    } catch (const Error& error) {
        throw Error(ExitCode::locked, std::string("an interrupted transaction could not be recovered "
                                                  "automatically (") + error.what() + "); run `venvtx recover`");
    }
}

} // namespace venvtx
