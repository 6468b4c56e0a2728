-- 0003_verdicts: a restore's checked verdict. restored is 1 only after every journaled path
-- was compared with its before-state; unrestored lists (JSON array) the paths that were not.
ALTER TABLE transactions ADD COLUMN restored INTEGER;
ALTER TABLE transactions ADD COLUMN unrestored TEXT;
