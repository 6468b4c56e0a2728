-- 0005_retention: the store's retention policy (one row per setting: keep_last, keep_seconds,
-- max_bytes, automatic), and for a transaction gc pruned, the state it had before (its objects
-- may be gone; state is then 'pruned').
CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Objects gc dropped from `objects` whose files it has not deleted yet: a killed gc's are
-- deleted by the next mutating command (unless stored again meanwhile).
CREATE TABLE doomed_objects (sha256 TEXT PRIMARY KEY);
ALTER TABLE transactions ADD COLUMN pruned_from TEXT;
