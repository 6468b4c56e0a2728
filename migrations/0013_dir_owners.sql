-- 0013_dir_owners: a journaled directory's owner and group, so that a directory a change removes
-- (or makes) comes back owned as it was, not as its parent is. NULL: not known (a file's owner
-- travels with its inode; entries written before this migration).
ALTER TABLE entries ADD COLUMN before_uid INTEGER;
ALTER TABLE entries ADD COLUMN before_gid INTEGER;
ALTER TABLE entries ADD COLUMN after_uid INTEGER;
ALTER TABLE entries ADD COLUMN after_gid INTEGER;
