-- 0010_states: the venv's states, and history entries that are not transactions.
--
-- A state is the set of installed distributions (see src/state/venv_state.hpp), named by the
-- sha256 of its canonical JSON: a venv that returns to an earlier state gets the same id. Each
-- RECORD's text is kept once, by its sha256, so that any past state lists file by file.
CREATE TABLE states (
    id TEXT PRIMARY KEY,
    dists TEXT NOT NULL  -- JSON array, sorted: {name, normalized, version, dist_info, installer, record}
);
CREATE TABLE record_texts (
    sha256 TEXT PRIMARY KEY,
    text BLOB NOT NULL
);
-- What the store knows of its venv (one row per fact): the venv it belongs to (venv.root,
-- venv.python), the state recorded last (state.last) and when (state.recorded_at).
CREATE TABLE venv_facts (name TEXT PRIMARY KEY, value TEXT NOT NULL);
-- What observing a dist-info read, kept while the InodeKeys of its directory, RECORD, METADATA
-- and INSTALLER are all unchanged (`key`): a state check reads only the dist-infos that moved.
CREATE TABLE dist_facts (
    dist_info TEXT PRIMARY KEY,  -- venv-relative
    key TEXT NOT NULL,
    dist TEXT NOT NULL           -- one element of states.dists
);

-- What `status --files` found: per dist-info, the InodeKey of each RECORD-listed file (in
-- RECORD's order, 40 bytes each, zeros where unknown) when its bytes matched RECORD's hash,
-- valid for that RECORD (`record`, its sha256). A file whose key is unchanged is not read again.
CREATE TABLE record_checks (
    dist_info TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    keys BLOB NOT NULL
);

-- transactions gains the kinds that record without changing the venv: 'outside' (a change
-- made by something else, found at a command's start), 'stamp' and 'exec' (a tracked run);
-- these are in state 'recorded'. Every entry names the states before and after it, who ran
-- venvtx where, and which venvtx; `details` holds what a kind records beyond the columns
-- (JSON: an outside change's window, a stamp's comment, a run's command and libraries).
CREATE TABLE new_transactions (
    -- narrow columns first: what `log` reads of each row comes before the probe reports, which
    -- may overflow into pages of their own that a row read would otherwise walk through
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('remove', 'install', 'run', 'rollback', 'outside', 'stamp', 'exec')),
    state TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    undoes INTEGER REFERENCES transactions(id),
    undone_by INTEGER REFERENCES transactions(id),
    user TEXT,
    host TEXT,
    venvtx_version TEXT,
    state_before TEXT REFERENCES states(id),
    state_after TEXT REFERENCES states(id),
    files_added INTEGER,
    files_removed INTEGER,
    files_modified INTEGER,
    files_bytes INTEGER,
    pruned_from TEXT,
    restored INTEGER,
    details TEXT,
    message TEXT,
    argv TEXT NOT NULL,
    unrestored TEXT,
    baseline TEXT,
    probe TEXT,
    preview TEXT,
    live_probe TEXT
);
INSERT INTO new_transactions (id, kind, state, started_at, finished_at, argv, baseline, probe, undoes, undone_by,
                              message, restored, unrestored, preview, live_probe, pruned_from, files_added,
                              files_removed, files_modified, files_bytes)
    SELECT id, kind, state, started_at, finished_at, argv, baseline, probe, undoes, undone_by, message, restored,
           unrestored, preview, live_probe, pruned_from, files_added, files_removed, files_modified, files_bytes
    FROM transactions;
DROP TABLE transactions;
ALTER TABLE new_transactions RENAME TO transactions;
CREATE INDEX transactions_by_kind ON transactions(kind, id);
-- Every command that reads the history asks first whether a transaction is unfinished.
CREATE INDEX transactions_by_state ON transactions(state);
