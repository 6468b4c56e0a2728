-- 0009_pending_captures: files a removal captured by rename and has not hashed yet. Each waits
-- in staging/<tx>/<entry id> with its entry's before_object NULL; it is trusted without being
-- read while its inode is the one recorded here (see 0008: ctime moves on any change), and
-- otherwise (a copied store, a chmod -R) only while its bytes hash to content_hash. A rollback
-- renames it back; `venvtx gc` hashes it into an object (the row goes); pruning deletes it.
CREATE TABLE pending_captures (
    entry_id INTEGER PRIMARY KEY REFERENCES entries(id),
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    -- RECORD's "sha256=..." for the file where RECORD lists it with the file's size; else the
    -- file's own, hashed at capture (bytecode, RECORD itself, a file changed since its install)
    content_hash TEXT NOT NULL
);
