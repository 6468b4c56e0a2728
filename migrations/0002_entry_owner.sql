-- 0002_entry_owner: the distribution a path belonged to, so verify and show can name it.
ALTER TABLE entries ADD COLUMN owner TEXT;
