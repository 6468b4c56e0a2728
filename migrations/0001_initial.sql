-- 0001_initial: transactions, the packages and paths each one changed, and stored objects.
CREATE TABLE transactions (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('remove', 'install', 'run', 'rollback')),
    -- started | applied | committed | rolled_back | undone | aborted | interrupted
    state TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    argv TEXT NOT NULL,           -- JSON array
    baseline TEXT,                -- JSON probe report before the change
    probe TEXT,                   -- JSON probe report after the change
    undoes INTEGER REFERENCES transactions(id),
    undone_by INTEGER REFERENCES transactions(id),
    message TEXT
);

CREATE TABLE packages (
    tx_id INTEGER NOT NULL REFERENCES transactions(id),
    name TEXT NOT NULL,
    before TEXT,
    after TEXT
);
CREATE INDEX packages_by_tx ON packages(tx_id);

-- One row per path a transaction touched: its state before and after (type 'absent' when
-- missing). Files name their content by object; progress drives recovery.
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    tx_id INTEGER NOT NULL REFERENCES transactions(id),
    path TEXT NOT NULL,
    before_type TEXT NOT NULL,
    before_mode INTEGER NOT NULL DEFAULT 0,
    before_size INTEGER NOT NULL DEFAULT 0,
    before_mtime_ns INTEGER NOT NULL DEFAULT 0,
    before_link TEXT,
    before_object TEXT,
    after_type TEXT NOT NULL,
    after_mode INTEGER NOT NULL DEFAULT 0,
    after_size INTEGER NOT NULL DEFAULT 0,
    after_mtime_ns INTEGER NOT NULL DEFAULT 0,
    after_link TEXT,
    after_object TEXT,
    progress TEXT NOT NULL DEFAULT 'planned'  -- planned | captured | applied | restored
);
CREATE INDEX entries_by_tx ON entries(tx_id);
CREATE INDEX entries_by_before_object ON entries(before_object);
CREATE INDEX entries_by_after_object ON entries(after_object);

CREATE TABLE objects (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created_by INTEGER REFERENCES transactions(id)
);
