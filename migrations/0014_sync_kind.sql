-- 0014_sync_kind: transactions gains the kind 'sync' (`venvtx sync --to POINT`: a point's
-- versions put back through the installer, as one command transaction, journaled and
-- recovered as `install` and `run` are). SQLite cannot change a CHECK in place: the table is
-- rebuilt with the same columns, in the same order, as 0010 did.
CREATE TABLE new_transactions (
    -- narrow columns first: what `log` reads of each row comes before the probe reports, which
    -- may overflow into pages of their own that a row read would otherwise walk through
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('remove', 'install', 'run', 'rollback', 'outside', 'stamp', 'exec', 'sync')),
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
INSERT INTO new_transactions (id, kind, state, started_at, finished_at, undoes, undone_by, user, host, venvtx_version, state_before, state_after, files_added, files_removed, files_modified, files_bytes, pruned_from, restored, details, message, argv, unrestored, baseline, probe, preview, live_probe)
    SELECT id, kind, state, started_at, finished_at, undoes, undone_by, user, host, venvtx_version, state_before, state_after, files_added, files_removed, files_modified, files_bytes, pruned_from, restored, details, message, argv, unrestored, baseline, probe, preview, live_probe
    FROM transactions;
DROP TABLE transactions;
ALTER TABLE new_transactions RENAME TO transactions;
CREATE INDEX transactions_by_kind ON transactions(kind, id);
CREATE INDEX transactions_by_state ON transactions(state);
