-- 0006_packs: compressed packs (<store>/packs/<file>: tar + zstd, written with libarchive) that
-- hold objects only older transactions reference. An object keeps its `objects` row whether it
-- is loose, packed or both; a packed one has a `pack_members` row. A pack's row comes first
-- ('writing'); its file is written and fsynced; then, in one SQL transaction, the row is
-- 'sealed' and its members listed; only after that are the members' loose files deleted. A pack
-- nothing needs becomes 'dead' (members dropped) before its file is deleted. So every file under
-- packs/ is known to the index: a 'writing' or 'dead' row's file is garbage the next gc or
-- recover deletes (file first, then row).
CREATE TABLE packs (
  id INTEGER PRIMARY KEY,
  file TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('writing', 'sealed', 'dead')),
  bytes INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE pack_members (
  sha256 TEXT PRIMARY KEY,
  pack_id INTEGER NOT NULL REFERENCES packs(id),
  ordinal INTEGER NOT NULL
);
CREATE INDEX pack_members_by_pack ON pack_members (pack_id, ordinal);
