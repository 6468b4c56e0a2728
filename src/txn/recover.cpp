// Recovery: finish an interrupted transaction by restoring its before-state.
#include "venvtx/txn/recover.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/txn/materialize.hpp"
#include "venvtx/txn/snapshot.hpp"

#include <set>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// A crash between writing a temporary and renaming it leaves it beside its target.
void remove_temporaries(const VenvLayout& layout, const std::vector<Entry>& entries) {
    for (const auto& entry : entries) {
        stdfs::path temporary = temporary_path_for(layout.root / entry.path, entry.id);
        if (observe_node(temporary).type != NodeType::absent) {
            Fs::instance().unlink(temporary);
        }
    }
}

// An external command interrupted before its changes were diffed: the journal holds the whole
// snapshot, and anything not in it may be the command's — or a concurrent pip's, or the user's.
// Nothing attributes it to the transaction, so it stays where it is and the verdict names it.
std::vector<std::string> unknown_paths(const Context& context, Store& store, const std::vector<Entry>& entries) {
    std::set<std::string> known;
    for (const auto& entry : entries) {
        known.insert(entry.path);
    }
    std::vector<std::string> unknown;  // the topmost of each new tree
    std::set<std::string> seen;
    for (const auto& [path, state] : snapshot_venv(context.layout, store.root()).states) {
        if (known.count(path) != 0) {
            continue;
        }
        bool below_another = false;
        for (stdfs::path up = stdfs::path(path).parent_path(); !up.empty() && !below_another; up = up.parent_path()) {
            below_another = seen.count(up.string()) != 0;
        }
        seen.insert(path);
        if (!below_another) {
            unknown.push_back(path);
        }
    }
    return unknown;
}

// A watched command interrupted: paths below a directory it created (or renamed into place)
// were never journaled one by one; they are new, so they go too.
void add_new_trees(const VenvLayout& layout, const stdfs::path& store_root, std::vector<Entry>& entries) {
    std::set<std::string> known;
    for (const auto& entry : entries) {
        known.insert(entry.path);
    }
    std::vector<Entry> below;
    for (auto& entry : entries) {
        if (entry.progress != EntryProgress::touched || entry.before.type != NodeType::absent) {
            continue;
        }
        entry.after = observe_node(layout.root / entry.path); // a directory now: removed deepest first
        if (entry.after.type != NodeType::dir) {
            continue;
        }
        for (const auto& [path, state] : snapshot_below(layout, entry.path, store_root).states) {
            if (known.insert(path).second) {
                Entry added;
                added.path = path;
                added.after = state;
                below.push_back(added);
            }
        }
    }
    entries.insert(entries.end(), below.begin(), below.end());
}

std::vector<std::string> recover_one(const Context& context, Store& store, const TransactionRecord& record) {
    std::vector<std::string> unrestored = restore_journaled(context, store, record.id, record.kind);
    store.history().set_restored(record.id, unrestored);
    store.history().set_state(record.id, TxState::rolled_back,
                              std::string("interrupted while ") + to_string(record.state) +
                                  (unrestored.empty() ? "; recovered to the state before it"
                                                      : "; recovered, but " + std::to_string(unrestored.size()) +
                                                            " path(s) differ from before"));
    return unrestored;
}

} // namespace

std::vector<std::string> restore_journaled(const Context& context, Store& store, std::int64_t tx,
                                           const std::string& kind) {
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
    remove_temporaries(context.layout, entries);
    bool command = kind == "install" || kind == "run";
    std::vector<std::string> unknown;
    if (command && !entries.empty() && entries.front().progress == EntryProgress::snapshot) {
        unknown = unknown_paths(context, store, entries);
    }
    if (command) {
        add_new_trees(context.layout, store.root(), entries);
    }
    sources.owns_every_node = command;
    MaterializeResult result = materialize(context.layout, store.objects(), entries, Side::before, sources);
    result.moved.insert(result.moved.end(), unstored.begin(), unstored.end());
    history.forget_objects(result.moved);
    Fs::instance().remove_tree(store.objects().staging_dir(tx));
    result.unrestored.insert(result.unrestored.end(), unknown.begin(), unknown.end());
    return result.unrestored;
}

std::vector<std::int64_t> recover_interrupted(const Context& context, Store& store) {
    std::vector<std::int64_t> recovered;
    for (const auto& record : store.history().unfinished()) {
        std::vector<std::string> unrestored = recover_one(context, store, record);
        recovered.push_back(record.id);
        std::string prefix = "recovered interrupted tx " + std::to_string(record.id) + " (" + record.kind + "): ";
        if (unrestored.empty()) {
            context.out.say(prefix + "the venv is back to its state before it");
        } else {
            context.out.verdict(prefix + "NOT restored: " + std::to_string(unrestored.size()) +
                                " path(s) differ from before, e.g. " + unrestored.front());
        }
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

MutationSession::MutationSession(const Context& context, std::optional<double> wait_s)
    : m_store(context.store_root, true), m_lock(context.store_root, context.layout.root, wait_s) {
    recover_before_mutating(context, m_store);
}

Outcome recover(const Context& context, std::optional<double> wait_s) {
    if (!Store::exists(context.store_root)) {
        context.out.say("nothing to recover: no venvtx history");
        return {};
    }
    Store store(context.store_root, true);
    MutationLock lock(context.store_root, context.layout.root, wait_s);
    std::vector<std::int64_t> recovered = recover_interrupted(context, store);
    if (recovered.empty()) {
        context.out.say("nothing to recover");
        return {};
    }
    return {ExitCode::ok, store.history().find(recovered.back())};
}

} // namespace venvtx
