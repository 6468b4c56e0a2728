-- 0007_file_counts: a finished transaction's file counts (what `log` prints), computed from its
-- entries once when it finishes, so that `log` reads one row per transaction. NULL: unfinished,
-- or finished before this migration (then counted from the entries when read).
ALTER TABLE transactions ADD COLUMN files_added INTEGER;
ALTER TABLE transactions ADD COLUMN files_removed INTEGER;
ALTER TABLE transactions ADD COLUMN files_modified INTEGER;
ALTER TABLE transactions ADD COLUMN files_bytes INTEGER;
