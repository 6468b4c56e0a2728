// The transaction history in the index: transactions, their package changes and path entries.
#pragma once

#include "venvtx/core/node_state.hpp"
#include "venvtx/store/database.hpp"
#include "venvtx/store/entry_progress.hpp"
#include "venvtx/store/pending_captures.hpp"
#include "venvtx/store/transaction_state.hpp"

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

struct PackageChange {
    std::string name;
    std::optional<std::string> before;
    std::optional<std::string> after;
};

// One path a transaction touched: what it was before and after.
struct Entry {
    std::int64_t id = 0;
    std::string path;  // venv-relative
    NodeState before;
    NodeState after;
    EntryProgress progress = EntryProgress::planned;
    std::string owner;  // the distribution the path belonged to, when known
};

struct FileSummary {
    std::int64_t added = 0;
    std::int64_t removed = 0;
    std::int64_t modified = 0;
    std::int64_t bytes = 0;
};

struct TransactionRecord {
    std::int64_t id = 0;
    std::string kind;
    TxState state = TxState::started;
    std::string started_at;
    std::optional<std::string> finished_at;
    nlohmann::json argv;  // an array
    std::vector<PackageChange> packages;
    FileSummary files;
    std::optional<nlohmann::json> baseline;
    std::optional<nlohmann::json> probe;
    std::optional<std::int64_t> undoes;
    std::optional<std::int64_t> undone_by;
    std::optional<std::string> message;
    std::optional<bool> restored;          // set once a restore ran and was checked
    std::vector<std::string> unrestored;   // paths that restore could not bring back
    std::optional<nlohmann::json> preview;     // {"used": ..., "reason": ...}, when a probe was asked for
    std::optional<nlohmann::json> live_probe;  // --probe-live after a previewed change
    std::optional<TxState> pruned_from;        // the state gc found it in, once pruned
    std::optional<std::string> state_before;   // the venv's state ids (state/venv_state.hpp)
    std::optional<std::string> state_after;
    std::string user;            // who ran venvtx, on which host, which venvtx
    std::string host;
    std::string venvtx_version;
    std::optional<nlohmann::json> details;  // what an outside, stamp or exec entry records
};

// A history entry that changed nothing itself: an outside change, a stamp, a tracked run.
struct RecordedEntry {
    std::string kind;  // outside | stamp | exec
    nlohmann::json argv = nlohmann::json::array();
    std::string started_at;
    std::string finished_at;
    std::optional<std::string> state_before;
    std::optional<std::string> state_after;
    std::vector<PackageChange> packages;
    std::optional<std::string> message;
    std::optional<nlohmann::json> details;
    // Whether its states become the last recorded. Not for a run: a change made while it ran is
    // the next command's to record as an outside entry.
    bool sets_last_state = true;
};

class History {
public:
    explicit History(Database& db) : m_db(db) {}

    // Journals a new transaction in state 'started' with all its entries, durably, in one
    // SQL transaction. Entry ids are filled in.
    std::int64_t begin(const std::string& kind, const nlohmann::json& argv,
                       const std::vector<PackageChange>& packages, std::vector<Entry>& entries,
                       std::optional<std::int64_t> undoes = std::nullopt,
                       const std::optional<nlohmann::json>& details = std::nullopt);
    // An entry in state 'recorded' (see RecordedEntry); its states become the last recorded.
    std::int64_t record(const RecordedEntry& entry);
    // How the venv's state id is read (state/observe.hpp): each transaction records the state
    // at its start and, once final (committed, rolled back, aborted), at its end. Without an
    // observer (a read-only command) no state is recorded.
    void observe_states_with(std::function<std::optional<std::string>()> observer);
    // The newest state recorded, and when (venv_facts rows).
    std::optional<std::string> last_state();
    std::optional<std::string> last_recorded_at();
    // The venv is in `state` now (also the first state a store sees: its baseline, no entry).
    void note_last_state(const std::string& state);
    // An aborted transaction that changed nothing (e.g. the baseline probe failed).
    std::int64_t record_aborted(const std::string& kind, const nlohmann::json& argv,
                                const std::vector<PackageChange>& packages,
                                const std::optional<nlohmann::json>& baseline, const std::string& message);

    void set_state(std::int64_t id, TxState state,
                   const std::optional<std::string>& message = std::nullopt);
    // column: baseline, probe, live_probe or preview (each a JSON document).
    void set_probe(std::int64_t id, const char* column, const nlohmann::json& report);
    // Forgets a transaction that journaled no path (a command that changed nothing), as if it
    // had never begun. Throws if it has entries.
    void discard_empty(std::int64_t id);
    // Merges the keys of `more` (an object) into the transaction's details.
    void add_details(std::int64_t id, const nlohmann::json& more);
    void set_message(std::int64_t id, const std::string& message);
    // The checked outcome of a restore: restored when `unrestored` is empty.
    void set_restored(std::int64_t id, const std::vector<std::string>& unrestored);
    // Marks `id` committed and, atomically with it, `undoes` (if any) undone by `id`; when
    // `undoes` was itself a rollback, the transaction it had undone is committed again (redo).
    // `moved_out`: objects the transaction moved into the venv, no longer stored (forgotten);
    // so are the pending captures of `undoes` (a rollback renamed them back). A redo hashed
    // what it captured: a redone transaction's before-states left unhashed take those hashes.
    // `undone_too`: older transactions undone by the same rollback (rollback --to), marked so too.
    void commit(std::int64_t id, std::optional<std::int64_t> undoes,
                const std::vector<std::string>& moved_out = {}, const std::vector<std::int64_t>& undone_too = {});
    // Stores the objects of `entries` (before/after), their progress and the captures left
    // unhashed, in one SQL transaction.
    void save_entries(std::int64_t tx, const std::vector<Entry>& entries,
                      const std::vector<std::pair<std::string, std::uint64_t>>& new_objects,
                      const std::vector<PendingCapture>& pending = {});
    // Whether each commit waits for the disk (the default). Off, a commit is written (a killed
    // venvtx loses none of it) but not fsynced; the next commit with it on flushes it too.
    void sync_each_commit(bool sync);
    // Journals more entries of a running transaction (ids filled in), in one SQL transaction.
    void add_entries(std::int64_t tx, std::vector<Entry>& entries);
    void forget_objects(const std::vector<std::string>& hexes);
    void set_packages(std::int64_t tx, const std::vector<PackageChange>& packages);
    // After an external command: drops the snapshot entries that did not change, saves the
    // changed ones and inserts the added ones (ids filled in), with the new objects.
    void finish_snapshot(std::int64_t tx, const std::vector<std::int64_t>& unchanged,
                         std::vector<Entry>& changed, std::vector<Entry>& added,
                         const std::vector<std::pair<std::string, std::uint64_t>>& new_objects);
    std::vector<std::string> objects_created_by(std::int64_t tx);
    // Whether the index lists the object (a file under objects/ alone may be garbage a gc left).
    bool has_object(const std::string& hex);
    // Those of `hexes` that no entry of any unpruned transaction but `tx` refers to.
    std::set<std::string> referenced_only_by(std::int64_t tx, const std::set<std::string>& hexes);
    // Every stored object with one distribution, transaction and path that needs it
    // ("sglang, tx 3: lib/.../sglang/__init__.py").
    std::vector<std::pair<std::string, std::string>> object_references();

    // Newest first (what `log` prints: transaction_lines).
    std::vector<TransactionRecord> list(std::optional<std::int64_t> limit);
    std::optional<TransactionRecord> find(std::int64_t id);
    std::vector<Entry> entries(std::int64_t tx);
    // The newest committed, not-undone transaction that is not itself a rollback.
    std::optional<TransactionRecord> newest_undoable();
    // The newest committed rollback of a non-rollback, not itself undone (what --redo undoes).
    std::optional<TransactionRecord> newest_redoable();
    std::vector<TransactionRecord> unfinished();
    // The newest transaction with a passing probe, before or after (its report lists what the
    // probe process had mapped).
    std::optional<TransactionRecord> newest_passing_probe();

private:
    std::int64_t insert_row(const std::string& kind, const char* state, const std::string& started_at,
                            const nlohmann::json& argv, const std::optional<std::string>& state_before,
                            const std::optional<std::string>& state_after,
                            const std::optional<nlohmann::json>& details, bool sets_last_state);
    void write_state(std::int64_t id, TxState state, const std::optional<std::string>& message,
                     const std::optional<std::string>& state_after);
    std::optional<std::string> observe_now();
    // One row of k_select_transaction; its packages too unless the caller reads them in bulk.
    TransactionRecord read_transaction(Statement& row, bool with_packages = true);
    std::optional<TransactionRecord> newest_where(const char* condition);
    void insert_entries(std::int64_t tx, std::vector<Entry>& entries);

    Database& m_db;
    std::function<std::optional<std::string>()> m_observe;
};

} // namespace venvtx
