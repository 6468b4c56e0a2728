-- 0012_holds: every recorded state holds its files.
--
-- pip and uv never write an installed file in place: they unlink it (uninstall, upgrade) and
-- write or link a new one. A second name for the file's inode, a hard link in <store>/holds/
-- on the venv's filesystem, keeps its exact bytes after any of them removes the venv's name,
-- without copying a byte. A hold is named by what the bytes should hash to (RECORD's hash, or
-- what hashing found for a file RECORD gives none). A file changed in place through another
-- name changes the hold too, so a hold's bytes are hashed again before any use, and one that
-- does not match is never put back.
CREATE TABLE holds (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL
);
-- Each distribution's files as a recorded state had them, by the sha256 of its RECORD (as in
-- states.dists): `layout` is a JSON array of ["d", path, mode] and ["f", path, mode, size,
-- mtime_ns, sha256] (venv-relative paths, every directory above a file up to the venv root);
-- `unheld`: the files that got no hold (another filesystem, unreadable, outside the venv).
CREATE TABLE held_dists (
    record TEXT PRIMARY KEY,
    layout TEXT NOT NULL,
    unheld INTEGER NOT NULL
);
