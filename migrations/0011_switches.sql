-- 0011_switches: a change put in place one top-level entry at a time (src/txn/switching.cpp).
-- One row per unit (a package directory, a module, a dist-info, a script) of one phase of a
-- transaction (1: its apply, 2: its restore): the unit's venv path, the shadow beside it where
-- its new version is built, and, once every shadow is built, the inodes that tell recovery
-- whether the two were switched. A finished phase's rows stay `done` (the check for changes
-- made outside a transaction reads which units were relinked); those of an unfinished
-- transaction are what `recover` reads first.
CREATE TABLE switches (
    tx_id INTEGER NOT NULL REFERENCES transactions(id),
    phase INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    unit TEXT NOT NULL,    -- venv-relative
    shadow TEXT NOT NULL,  -- venv-relative, in the unit's directory
    state TEXT NOT NULL CHECK (state IN ('building', 'ready', 'done')),
    fresh INTEGER NOT NULL,  -- nothing was at the unit's path: its shadow took sources by rename
    old_ino INTEGER NOT NULL DEFAULT 0,  -- the unit's inode when ready (0: absent)
    new_ino INTEGER NOT NULL DEFAULT 0,  -- the shadow's inode when ready (0: absent)
    PRIMARY KEY (tx_id, phase, ordinal)
);
