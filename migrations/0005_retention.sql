-- 0005_retention: the store's retention policy (one row per setting: keep_last, keep_seconds,
-- max_bytes, automatic), and for a transaction gc pruned, the state it had before (its objects
-- may be gone; state is then 'pruned').
CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
ALTER TABLE transactions ADD COLUMN pruned_from TEXT;
