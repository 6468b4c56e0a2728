-- 0008_inode_facts: facts kept with the inode they were read from, trusted only while that inode
-- is unchanged (same device, inode, size, mtime and ctime; ctime moves on every write, chmod,
-- link or rename, and cannot be set back).
--
-- A loose object's inode when it was stored: a restore then trusts it without re-reading it
-- (`venvtx verify` always re-hashes). NULL: not recorded, hashed when needed.
ALTER TABLE objects ADD COLUMN dev INTEGER;
ALTER TABLE objects ADD COLUMN ino INTEGER;
ALTER TABLE objects ADD COLUMN mtime_ns INTEGER;
ALTER TABLE objects ADD COLUMN ctime_ns INTEGER;

-- What planning read from a venv file (a dist-info's METADATA, a shared object's dynamic
-- section), by venv-relative path; used only while the file's inode facts all match.
CREATE TABLE file_facts (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    facts TEXT NOT NULL
);
