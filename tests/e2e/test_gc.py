"""venvtx gc (packs: test_packs.py): retention by count, age and size,
pruned transactions kept in the log, objects only they needed deleted, rollbacks that would need
a pruned transaction refused, --dry-run, the stored policy and its automatic run, leftovers, and
kill -9 / ENOSPC / EIO at every step of a gc."""
import atexit
import hashlib
import os
import random
import re
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import time
import unittest

import test_crash
from support import VenvTestCase, pack_members, store_growth, tree_hash

KILLED = -9
DAY = 86400
REFUSED = re.compile(r"tx (\d+) \((\w+)\) was pruned by `venvtx gc`")
FOOTER = re.compile(r"^store: \S+ \S+ in (\d+) objects?(?:, \d+ of them packed \([^)]*\))?"
                    r"(?:, and \d+ removed files? \([^)]*\) not hashed yet)?; policy: (.+)$")

# Files the history's `run` transactions delete: objects big enough that the store's size means
# something (--max-size, and `--keep 0` freeing it to under 1 MB).
BLOBS = {"share/blob-a.bin": 2_000_000, "share/blob-b.bin": 1_500_000}


def blob_bytes(seed, size):
    return random.Random(seed).randbytes(size)


def history_steps(wheel_args):
    """(args, expected exit status): every kind of transaction and of ending."""
    run_b = ("rm \"$VIRTUAL_ENV/share/blob-b.bin\" && "
             "echo extra > \"$VIRTUAL_ENV/bin/extra\"")
    return [
        (["remove", "sglang"], 0),                                                         # 1 committed
        (["install", "--installer", "pip", "torch==2.12.0", *wheel_args[:1], "-q", "--no-compile",
          *wheel_args[1:]], 0),                                                            # 2 committed
        (["run", "--", "sh", "-c", "rm \"$VIRTUAL_ENV/share/blob-a.bin\""], 0),            # 3 committed
        (["remove", "flash-attn", "--no-baseline", "--probe", "import flash_attn"], 3),    # 4 aborted (preview)
        (["remove", "flash-attn"], 0),                                                     # 5 undone by 6
        (["rollback"], 0),                                                                 # 6 rollback of 5
        (["remove", "flashinfer-python", "--preview", "never", "--no-baseline", "--probe",
          "import flashinfer"], 3),                                                        # 7 rolled_back
        (["remove", "flashinfer-python"], 0),                                              # 8 committed again
        (["rollback"], 0),                                                                 # 9 undone by 10
        (["rollback", "--redo"], 0),                                                       # 10 redo of 9
        (["remove", "nvidia-nccl-cu13", "--no-probe"], 0),                                 # 11 committed
        (["run", "--", "sh", "-c", run_b], 0),                                             # 12 committed
    ]


_history = None


def file_digests(root, skip_index=True):
    """relative path -> (kind, mode, sha256) for everything under root (the index's files left
    out: they are compared by their rows)."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if skip_index and rel.startswith("index.sqlite"):
                continue
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    result[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(f.read()).hexdigest())
            else:
                result[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), "")
    return result


class GcCase(VenvTestCase):
    """Helpers: the shared history, the index's view of objects, the rollback walk."""

    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"

    # -- the history every retention test starts from ------------------------------------------

    def use_history(self):
        """Replaces this test's venv with a copy of the shared history (built once per process);
        returns {"before": {tx: tree}, "final": tree, "log": [...]}."""
        global _history
        if _history is None:
            for rel, size in BLOBS.items():
                with open(os.path.join(self.venv, rel), "wb") as f:
                    f.write(blob_bytes(rel, size))
            before = {}
            for number, (args, code) in enumerate(history_steps(self.wheel_args), 1):
                before[number] = tree_hash(self.venv)
                proc = self.venvtx(*args)
                self.assertEqual(proc.returncode, code, "tx %d %s: %s" % (number, args, proc.stdout + proc.stderr))
            log = self.log()
            self.assertEqual([t["id"] for t in log], list(range(len(before), 0, -1)))
            self.assertEqual([t["state"] for t in reversed(log)],
                             ["committed", "committed", "committed", "aborted", "undone", "committed",
                              "rolled_back", "committed", "undone", "committed", "committed", "committed"])
            cache = tempfile.mkdtemp(prefix="venvtx-e2e-gc-history-")
            atexit.register(shutil.rmtree, cache, True)
            subprocess.run(["cp", "-a", self.venv, os.path.join(cache, "venv")], check=True)
            _history = {"dir": os.path.join(cache, "venv"), "before": before, "final": tree_hash(self.venv),
                        "log": log}
        shutil.rmtree(self.venv)
        subprocess.run(["cp", "-a", _history["dir"], self.venv], check=True)
        return _history

    # -- reading the store ----------------------------------------------------------------------

    def log(self):
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return log

    def query(self, sql, *params):
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def states(self):
        return dict(self.query("SELECT id, state FROM transactions"))

    def pruned_ids(self):
        return [row[0] for row in self.query("SELECT id FROM transactions WHERE state = 'pruned' ORDER BY id")]

    def live_ids(self):
        return [row[0] for row in self.query("SELECT id FROM transactions WHERE state != 'pruned' ORDER BY id")]

    def index_rows(self):
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            # dist_facts and the observed.* venv_facts are caches of what reading the dist-infos
            # found: any command may fill them once the venv's files settle (2 s after a copy)
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                               "name != 'dist_facts' ORDER BY name")]
            rows = {t: db.execute('SELECT * FROM "%s"' % t).fetchall() for t in tables}
            rows["venv_facts"] = [row for row in rows.get("venv_facts", []) if not str(row[0]).startswith("observed.")]
            return {t: sorted(map(repr, found)) for t, found in rows.items()}
        finally:
            db.close()

    def store_snapshot(self):
        """Every file under .venvtx by content (the index by its rows), and the venv's tree."""
        return (file_digests(os.path.join(self.venv, ".venvtx")), self.index_rows(), tree_hash(self.venv))

    def needed_objects(self):
        """What an unpruned transaction needs: its entries' before-state objects, except those a
        rollback moved back into the venv (zero-copy: the undone transaction's own files, which
        its rollback's after-state names and the index no longer lists)."""
        needed = {row[0] for row in self.query(
            "SELECT DISTINCT e.before_object FROM entries e JOIN transactions t ON t.id = e.tx_id "
            "WHERE t.state != 'pruned' AND e.before_object IS NOT NULL")}
        moved_back = {row[0] for row in self.query(
            "SELECT DISTINCT e.before_object FROM entries e JOIN transactions t ON t.id = e.tx_id "
            "JOIN entries r ON r.tx_id = t.undone_by AND r.path = e.path AND r.after_object = e.before_object "
            "WHERE t.state = 'undone' AND e.before_object NOT IN (SELECT sha256 FROM objects)")}
        return needed - moved_back

    def object_rows(self):
        return dict(self.query("SELECT sha256, size FROM objects"))

    def object_file_names(self):
        return {os.path.basename(os.path.dirname(p)) + os.path.basename(p) for p in self.object_files()}

    def missing_objects(self):
        """Needed objects without an index row, or with neither a loose file nor a pack member
        holding exactly their bytes."""
        rows = self.object_rows()
        packed = pack_members(os.path.join(self.venv, ".venvtx"))
        missing = []
        for hex in sorted(self.needed_objects()):
            path = os.path.join(self.venv, ".venvtx", "objects", hex[:2], hex[2:])
            if hex not in rows:
                missing.append(hex)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    if hashlib.sha256(f.read()).hexdigest() != hex:
                        missing.append(hex + " (corrupted)")
            elif packed.get(hex) != hex:
                missing.append(hex + (" (corrupted in its pack)" if hex in packed else ""))
        return missing

    def assertObjectsExactlyNeeded(self):
        """After a gc that pruned: the index lists exactly what unpruned transactions need, and
        each listed object is a loose file or a pack member, with its bytes, and nothing else is."""
        self.assertEqual(self.missing_objects(), [])
        rows = set(self.object_rows())
        needed = self.needed_objects()
        self.assertEqual(sorted(rows - needed), [], "objects no unpruned transaction needs were kept")
        loose = self.object_file_names()
        self.assertEqual(sorted(loose - rows), [], "loose files the index does not list")
        self.assertEqual(sorted(rows - loose - set(pack_members(os.path.join(self.venv, ".venvtx")))), [])

    def assertVerifyClean(self, context=""):
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 0, "%s verify: %s %s" % (context, proc.stdout[-3000:], proc.stderr))

    def gc(self, *args):
        proc, doc = self.venvtx_json("gc", *args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return doc

    # -- rollbacks ------------------------------------------------------------------------------

    def assertRefused(self, args, allowed):
        """`venvtx ARGS` needs a pruned transaction: exit 2, one line naming one of `allowed`
        ({id: kind}), nothing changed (the venv, the store, the log)."""
        before = self.store_snapshot()
        proc = self.venvtx(*args)
        self.assertOneLineError(proc, 2)
        found = REFUSED.search(proc.stderr)
        self.assertIsNotNone(found, "%s: %r" % (args, proc.stderr))
        named = int(found.group(1))
        self.assertIn(named, allowed, "%s named tx %d; expected one of %s: %r" % (args, named, sorted(allowed), proc.stderr))
        self.assertEqual(found.group(2), allowed[named])
        after = self.store_snapshot()
        self.assertTreeEqual(before[2], after[2])
        self.assertEqual(before[1], after[1], "%s changed the index" % args)
        self.assertEqual(before[0], after[0], "%s changed the store's files" % args)
        return named

    def walk(self, history, pruned):
        """Plain `rollback`, again and again: each undoes the newest committed transaction, which
        must restore exactly the tree recorded before it; the first one that would need a pruned
        transaction must be refused, naming it."""
        log = history["log"]
        candidates = [t for t in log if t["state"] == "committed" and t["kind"] != "rollback" and t["undone_by"] is None]
        undone = []
        for tx in candidates:
            if tx["id"] in pruned:
                self.assertRefused(["rollback"], {tx["id"]: tx["kind"]})
                return undone
            proc = self.venvtx("rollback")
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("undoing tx %d (%s)" % (tx["id"], tx["kind"]), proc.stdout)
            self.assertTreeEqual(history["before"][tx["id"]], tree_hash(self.venv))
            undone.append(tx["id"])
        proc = self.venvtx("rollback")
        self.assertOneLineError(proc, 2)
        self.assertNotRegex(proc.stderr, REFUSED)
        return undone

    # -- expectations, from the rules -----------------------------------------------------------

    def expected_by_rules(self, keep=None, older=None, ages=None):
        """The longest run of oldest unpruned transactions that no rule keeps. --keep N counts
        the transactions that changed the venv (committed, or undone since): an aborted or a
        restored one is kept only when newer than the Nth newest of those."""
        live = self.live_ids()
        states = dict(self.query("SELECT id, state FROM transactions"))
        pruned = []
        for i, tx in enumerate(live):
            newer = sum(1 for later in live[i + 1:] if states[later] in ("committed", "undone"))
            kept = (keep is not None and newer < keep) or (older is not None and ages.get(tx, 0) < older) or \
                   (keep is None and older is None)
            if kept:
                break
            pruned.append(tx)
        return pruned

    def expected_by_size(self, max_bytes):
        """Then, while the objects unpruned transactions need exceed max_bytes, the oldest go
        too, never the newest."""
        live = self.live_ids()
        rows = self.object_rows()
        newest = {hex: 0 for hex in rows}
        for tx, hex in self.query("SELECT e.tx_id, e.before_object FROM entries e JOIN transactions t ON "
                                  "t.id = e.tx_id WHERE t.state != 'pruned' AND e.before_object IS NOT NULL"):
            newest[hex] = max(newest.get(hex, 0), tx)
        point = 0
        if sum(rows.values()) <= max_bytes:
            return []

        def kept(through):
            return sum(size for hex, size in rows.items() if newest[hex] > through)

        for tx in live[:-1]:
            if kept(point) <= max_bytes:
                break
            point = tx
        return [tx for tx in live if tx <= point]

    def backdate(self, ages):
        now = time.time()
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            for tx, age in ages.items():
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age))
                db.execute("UPDATE transactions SET started_at = ? WHERE id = ?", (stamp, tx))
            db.commit()
        finally:
            db.close()


class Retention(GcCase):
    """Each retention form on a fresh copy of the same history: exactly the expected prefix is
    pruned, everything unpruned still rolls back byte-identically, the first rollback that needs a
    pruned transaction is refused, verify is clean."""

    def check_pruned(self, history, doc, expected, sizes_before):
        self.assertEqual(doc["pruned"], expected)
        self.assertFalse(doc["dry_run"])
        self.assertEqual(self.pruned_ids(), expected)
        old = {t["id"]: t for t in history["log"]}
        for tx in self.log():
            if tx["id"] in expected:
                self.assertEqual((tx["state"], tx["pruned_from"]), ("pruned", old[tx["id"]]["state"]), tx["id"])
                self.assertEqual(tx["packages"], old[tx["id"]]["packages"])
                self.assertEqual(tx["files"], old[tx["id"]]["files"])
            else:
                self.assertEqual(tx["state"], old[tx["id"]]["state"], tx["id"])
                self.assertIsNone(tx.get("pruned_from"))
        self.assertObjectsExactlyNeeded()
        freed = {hex: size for hex, size in sizes_before.items() if hex not in self.object_rows()}
        self.assertEqual(doc["freed_objects"], len(freed))
        self.assertEqual(doc["freed_bytes"], sum(freed.values()))
        self.assertEqual(doc["store"], {"bytes": sum(self.object_rows().values()), "objects": len(self.object_rows())})
        self.assertVerifyClean("after gc")

    def test_keep_n(self):
        history = self.use_history()
        sizes = self.object_rows()
        self.assertEqual(self.gc("--keep", "20", "--dry-run")["pruned"], [])
        # 6 and the 5 after it that changed the venv are the newest 6: 7, restored, is not counted.
        self.assertEqual(self.expected_by_rules(keep=6), [1, 2, 3, 4, 5])
        self.assertEqual(self.gc("--keep", "6", "--dry-run")["pruned"], [1, 2, 3, 4, 5])
        expected = self.expected_by_rules(keep=5)
        # The test's own arithmetic: 8 and the 4 after it are the newest 5 that changed the venv;
        # 4 (aborted) and 7 (restored) are not counted.
        self.assertEqual(expected, [1, 2, 3, 4, 5, 6, 7])
        doc = self.gc("--keep", "5")
        self.check_pruned(history, doc, expected, sizes)
        # --to 1 would undo tx 2 and 3 too (pruned): refused, naming one of them.
        self.assertRefused(["rollback", "--to", "1"], {2: "install", 3: "run"})
        # The one redoable rollback (tx 6, of tx 5) is pruned.
        self.assertRefused(["rollback", "--redo"], {6: "rollback"})
        self.assertEqual(self.walk(history, expected), [12, 11, 8])
        self.assertVerifyClean("after the walk")

    def test_older_than(self):
        history = self.use_history()
        # Ages (tx 5 young among old ones: pruning stops there, always a prefix); 7 to 12: now.
        ages = {1: 30 * DAY, 2: 20 * DAY, 3: 9 * DAY, 4: 3 * DAY, 5: 3600, 6: 5 * DAY}
        self.backdate(ages)
        sizes = self.object_rows()
        for text, seconds in (("2d", 2 * DAY), ("48h", 2 * DAY), ("2880m", 2 * DAY), ("1w", 7 * DAY),
                              ("2w", 14 * DAY), ("60d", 60 * DAY)):
            doc = self.gc("--older-than", text, "--dry-run")
            self.assertEqual(doc["pruned"], self.expected_by_rules(older=seconds, ages=ages), text)
        # Both rules: kept when either keeps it.
        self.assertEqual(self.gc("--older-than", "2d", "--keep", "8", "--dry-run")["pruned"],
                         self.expected_by_rules(keep=8, older=2 * DAY, ages=ages))
        self.assertEqual(self.expected_by_rules(keep=8, older=2 * DAY, ages=ages), [1, 2])
        expected = self.expected_by_rules(older=2 * DAY, ages=ages)
        self.assertEqual(expected, [1, 2, 3, 4])
        doc = self.gc("--older-than", "2d")
        self.check_pruned(history, doc, expected, sizes)
        self.assertRefused(["rollback", "--to", "2"], {3: "run"})
        self.assertEqual(self.walk(history, expected), [12, 11, 8])
        self.assertVerifyClean("after the walk")

    def test_max_size(self):
        history = self.use_history()
        # The size rule weighs objects: what the removals left unhashed is stored first (a gc that
        # prunes nothing), so the test's arithmetic below sees every byte the rule sees.
        self.assertEqual(self.gc("--keep", "20")["pruned"], [])
        self.assertEqual(self.query("SELECT COUNT(*) FROM pending_captures"), [(0,)])
        sizes = self.object_rows()
        total = sum(sizes.values())
        self.assertGreater(total, sum(BLOBS.values()))
        # Never the newest: even 1 byte keeps tx 12.
        self.assertEqual(self.gc("--max-size", "1", "--dry-run")["pruned"], list(range(1, 12)))
        # Over the size, the oldest kept go too.
        self.assertEqual(self.gc("--keep", "20", "--max-size", "1", "--dry-run")["pruned"], list(range(1, 12)))
        self.assertEqual(self.gc("--max-size", str(total), "--dry-run")["pruned"], [])
        self.assertEqual(self.gc("--max-size", "1GiB", "--dry-run")["pruned"], [])
        # A limit that the store fits only once tx 1 and 2 are gone.
        through_2 = sum(size for hex, size in sizes.items()
                        if any(tx > 2 for (tx,) in self.query(
                            "SELECT e.tx_id FROM entries e WHERE e.before_object = ?", hex)))
        expected = self.expected_by_size(through_2)
        self.assertEqual(expected, [1, 2])
        self.assertEqual(self.gc("--max-size", str(through_2 + 1), "--dry-run")["pruned"], self.expected_by_size(through_2 + 1))
        self.assertEqual(self.gc("--max-size", str(through_2 - 1), "--dry-run")["pruned"], self.expected_by_size(through_2 - 1))
        doc = self.gc("--max-size", str(through_2))
        self.check_pruned(history, doc, expected, sizes)
        self.assertLessEqual(doc["store"]["bytes"], through_2)
        self.assertEqual(self.walk(history, expected), [12, 11, 8, 3])
        self.assertVerifyClean("after the walk")

    def test_keep_0_prunes_everything_but_the_log_stays(self):
        history = self.use_history()
        store = os.path.join(self.venv, ".venvtx")
        self.assertGreater(self.disk_usage(store), sum(BLOBS.values()))
        doc = self.gc("--keep", "0")
        self.assertEqual(doc["pruned"], list(range(1, 13)))
        self.assertEqual(doc["store"], {"bytes": 0, "objects": 0})
        self.assertObjectsExactlyNeeded()
        self.assertEqual(self.object_files(), [])
        usage = store_growth(self.venv)
        self.assertLess(usage, 1_000_000, "the store still uses %d bytes on disk" % usage)
        log = self.log()
        old = {t["id"]: t for t in history["log"]}
        self.assertEqual([t["id"] for t in log], list(range(12, 0, -1)))
        for tx in log:
            self.assertEqual((tx["state"], tx["pruned_from"]), ("pruned", old[tx["id"]]["state"]))
        for number in range(1, 13):
            proc, shown = self.venvtx_json("show", str(number))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(shown["state"], "pruned")
            self.assertEqual(shown["packages"], old[number]["packages"])
            self.assertEqual(shown["files"], old[number]["files"])
            human = self.venvtx("show", str(number))
            self.assertEqual(human.returncode, 0)
            self.assertIn("pruned", human.stdout)
            if old[number]["packages"]:
                self.assertIn(old[number]["packages"][0]["name"], human.stdout)
        self.assertVerifyClean("after gc --keep 0")
        self.assertRefused(["rollback"], {12: "run"})
        self.assertRefused(["rollback", "--to", "1"], {t["id"]: t["kind"] for t in history["log"]
                                                       if t["state"] == "committed" and t["kind"] != "rollback"
                                                       and t["undone_by"] is None and t["id"] > 1})
        # The store goes on: a new transaction, its rollback.
        self.assertTreeEqual(history["final"], tree_hash(self.venv))
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(history["final"], tree_hash(self.venv))
        self.assertVerifyClean("after a new transaction")

    def test_redo_refusal_names_the_rollback_it_would_redo(self):
        self.use_history()
        self.assertEqual(self.gc("--keep", "2")["pruned"], list(range(1, 11)))
        # Unpruned, --redo would redo tx 6 (the rollback of tx 5): the only redoable rollback
        # (tx 10 is a redo, which is not redoable; tx 9 was undone). That is the one to name.
        self.assertRefused(["rollback", "--redo"], {6: "rollback"})

    @staticmethod
    def disk_usage(root):
        """du: st_blocks of everything under root but the index's own files and the reserve (room
        kept for recovery, store/space_reserve.hpp)."""
        total = 0
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                if dirpath == root and (name.startswith("index.sqlite") or name == "reserve"):
                    continue
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
        return total


class DryRun(GcCase):
    def test_dry_run_changes_nothing_and_matches_the_real_run(self):
        self.use_history()
        self.put_leftovers()
        for rules in (["--keep", "4"], ["--max-size", "1"], ["--keep", "0"], []):
            before = self.store_snapshot()
            proc, dry = self.venvtx_json("gc", "--dry-run", *rules)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue(dry["dry_run"])
            after = self.store_snapshot()
            self.assertEqual(before[0], after[0], "gc --dry-run %s changed the store's files" % rules)
            self.assertEqual(before[1], after[1], "gc --dry-run %s changed the index" % rules)
            self.assertTreeEqual(before[2], after[2])
            human = self.venvtx("gc", "--dry-run", *rules)
            self.assertEqual(human.returncode, 0)
            if dry["pruned"]:
                n = len(dry["pruned"])
                self.assertIn("would prune %d transaction%s" % (n, "" if n == 1 else "s"), human.stdout)
            else:
                self.assertIn("nothing to prune", human.stdout)
            self.assertEqual(before[1], self.index_rows())
        proc, dry = self.venvtx_json("gc", "--dry-run", "--keep", "4")
        proc, real = self.venvtx_json("gc", "--keep", "4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(real["pruned"], list(range(1, 9)))
        for field in ("pruned", "freed_objects", "freed_bytes"):
            self.assertEqual(dry[field], real[field], field)
        self.assertGreater(real["freed_bytes"], 0)
        self.assertEqual(self.pruned_ids(), real["pruned"])
        self.assertObjectsExactlyNeeded()

    def test_dry_run_with_set_policy_saves_nothing(self):
        self.use_history()
        before = self.store_snapshot()
        proc = self.venvtx("gc", "--dry-run", "--set-policy", "--keep", "1", "--auto", "off")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        after = self.store_snapshot()
        self.assertEqual(before[1].get("settings"), after[1].get("settings"),
                         "gc --dry-run --set-policy saved the policy: %s" % proc.stdout)
        self.assertEqual(before[1], after[1])
        self.assertEqual(before[0], after[0])

    def put_leftovers(self):
        store = os.path.join(self.venv, ".venvtx")
        os.makedirs(os.path.join(store, "trash", "7-123"))
        with open(os.path.join(store, "trash", "7-123", "x"), "wb") as f:
            f.write(b"t" * 700)


class Policy(GcCase):
    def footer(self):
        proc = self.venvtx("-v", "log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        last = proc.stdout.strip().splitlines()[-1]
        found = FOOTER.match(last)
        self.assertIsNotNone(found, "log's last line: %r" % last)
        self.assertEqual(int(found.group(1)), len(self.object_rows()))
        return found.group(2)

    def test_stored_policy_and_its_automatic_run(self):
        history = self.use_history()
        self.assertIn("keep the last 20 committed transactions and everything from the last 30 days, at most 20", self.footer())
        self.assertEqual(self.gc()["policy"], {"keep_last": 20, "keep_seconds": 30 * DAY,
                                               "max_bytes": 20_000_000_000, "automatic": True})
        proc, doc = self.venvtx_json("gc", "--set-policy", "--keep", "3", "--auto", "on")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        stored = {"keep_last": 3, "keep_seconds": None, "max_bytes": None, "automatic": True}
        self.assertEqual(doc["policy"], stored)
        self.assertEqual(doc["pruned"], list(range(1, 10)))
        self.assertEqual(self.live_ids(), [10, 11, 12])
        self.assertEqual(self.footer(), "keep the last 3 committed transactions; applied after every commit")
        # Five more commits: after each, exactly the newest three are unpruned.
        more = [["remove", "flash-attn"], ["rollback"], ["rollback", "--redo"], ["remove", "nvidia-cudnn-cu13", "--no-probe"],
                ["run", "--", "sh", "-c", "echo more > \"$VIRTUAL_ENV/bin/more\""]]
        for args in more:
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
            ids = [row[0] for row in self.query("SELECT id FROM transactions ORDER BY id")]
            self.assertEqual(self.live_ids(), ids[-3:], "after %s" % args)
            self.assertEqual(self.pruned_ids(), ids[:-3])
            self.assertObjectsExactlyNeeded()
        self.assertVerifyClean()
        # --auto off: the rules stay, commits no longer prune.
        proc, doc = self.venvtx_json("gc", "--set-policy", "--auto", "off")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        stored = dict(stored, automatic=False)
        self.assertEqual(doc["policy"], stored)
        self.assertEqual(self.footer(), "keep the last 3 committed transactions; applied by `venvtx gc` only")
        live = self.live_ids()
        for args in (["remove", "nvidia-nvshmem-cu13", "--no-probe"], ["rollback"],
                     ["run", "--", "sh", "-c", "echo again > \"$VIRTUAL_ENV/bin/again\""]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
            ids = [row[0] for row in self.query("SELECT id FROM transactions ORDER BY id")]
            live.append(ids[-1])
            self.assertEqual(self.live_ids(), live, "after %s with --auto off" % args)
        # A plain gc applies the stored policy, and reports it.
        doc = self.gc()
        self.assertEqual(doc["policy"], stored)
        self.assertEqual(doc["pruned"], live[:-3])
        self.assertEqual(self.live_ids(), live[-3:])
        self.assertObjectsExactlyNeeded()
        self.assertVerifyClean()

    def test_policy_forms(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        cases = [
            (["--keep", "7", "--older-than", "2w", "--max-size", "2GiB", "--auto", "off"],
             {"keep_last": 7, "keep_seconds": 14 * DAY, "max_bytes": 2 * 1024 ** 3, "automatic": False},
             "keep the last 7 committed transactions and everything from the last 14 days"),
            (["--older-than", "12h", "--max-size", "500M"],
             {"keep_last": None, "keep_seconds": 12 * 3600, "max_bytes": 500_000_000, "automatic": False},
             "keep everything from the last 12 hours"),
            (["--older-than", "90m", "--max-size", "10G", "--auto", "on"],
             {"keep_last": None, "keep_seconds": 90 * 60, "max_bytes": 10_000_000_000, "automatic": True}, None),
            (["--keep", "5", "--max-size", "500MB"],
             {"keep_last": 5, "keep_seconds": None, "max_bytes": 500_000_000, "automatic": True},
             "keep the last 5 committed transactions"),
            (["--older-than", "30d", "--max-size", "3KiB"],
             {"keep_last": None, "keep_seconds": 30 * DAY, "max_bytes": 3072, "automatic": True},
             "keep everything from the last 30 days"),
        ]
        for args, policy, footer in cases:
            proc, doc = self.venvtx_json("gc", "--set-policy", *args)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(doc["policy"], policy, args)
            self.assertEqual(self.gc("--dry-run")["policy"], policy)
            text = self.venvtx("-v", "log").stdout.strip().splitlines()[-1]
            self.assertRegex(text, FOOTER)
            if footer:
                self.assertIn(footer, text)
            self.assertIn("applied after every commit" if policy["automatic"] else "applied by `venvtx gc` only", text)


class Leftovers(GcCase):
    def test_trash_staging_stray_objects_and_previews_go(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        tree = tree_hash(self.venv)
        store = os.path.join(self.venv, ".venvtx")
        counted = 0

        def put(rel, size):
            nonlocal counted
            path = os.path.join(store, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(os.urandom(size))
            return size

        counted += put("trash/1-4242/lib/a.so", 1000)
        counted += put("trash/1-4242/b", 500)
        counted += put("trash/loose", 10)
        counted += put("staging/999/ab/" + "c" * 62, 300)      # a transaction that never was
        counted += put("staging/1/de/" + "f" * 62, 200)        # tx 1: pruned by this gc
        stray = "ab" + "0123456789abcdef" * 3 + "0123456789abcd"
        self.assertEqual(len(stray), 64)
        counted += put("objects/ab/" + stray[2:], 400)
        preview = put("preview/99999-1/upper/lib/x.py", 50)
        # tx 1's own removed files wait unhashed in its staging: pruned with it, counted with it.
        (pending_1,), = self.query("SELECT COALESCE(SUM(p.size), 0) FROM pending_captures p JOIN entries e ON "
                                   "e.id = p.entry_id WHERE e.tx_id = 1")
        self.assertGreater(pending_1, 0)
        os.makedirs(os.path.join(store, "preview", "99999-1", "work", "work"))
        os.chmod(os.path.join(store, "preview", "99999-1", "work", "work"), 0)
        put("preview/99999-1/lock", 0)
        self.assertEqual(self.venvtx("verify").returncode, 6)  # the stray object is a problem
        rows = self.index_rows()["objects"]
        proc, doc = self.venvtx_json("gc", "--keep", "1")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(doc["pruned"], [1])
        self.assertEqual(os.listdir(os.path.join(store, "trash")) if os.path.isdir(os.path.join(store, "trash")) else [], [])
        self.assertFalse(os.path.exists(os.path.join(store, "staging", "999")))
        self.assertFalse(os.path.exists(os.path.join(store, "staging", "1")))
        self.assertFalse(os.path.exists(os.path.join(store, "objects", "ab", stray[2:])))
        self.assertFalse(os.path.exists(os.path.join(store, "preview")))
        # tx 2's removal was left unhashed: the gc stored it, and added nothing else.
        self.assertEqual(self.query("SELECT COUNT(*) FROM pending_captures"), [(0,)])
        self.assertObjectsExactlyNeeded()
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertVerifyClean("after gc")
        human = self.venvtx("gc")
        self.assertEqual(human.returncode, 0)
        self.assertNotIn("removed", human.stdout)  # nothing left to remove
        self.assertEqual(self.venvtx("rollback").returncode, 0)  # tx 2 is unpruned
        self.assertOneLineError(self.venvtx("rollback"), 2)
        # What it removed, by size: the trash, both staging dirs and the stray object (a loose
        # file counts as much as one in a directory); the preview layer may count too.
        self.assertGreaterEqual(doc["other_bytes"], counted, "other_bytes %d; removed %d bytes of trash, staging "
                                "and stray objects (%d of them in loose files)" % (doc["other_bytes"], counted, 410))
        self.assertLessEqual(doc["other_bytes"], counted + preview + pending_1)


class Interplay(GcCase):
    """gc among the other commands: it recovers first, it takes the locks, and content it freed
    is stored again when a later transaction needs it."""

    def test_gc_recovers_an_interrupted_transaction_first(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        before = tree_hash(self.venv)
        killed = self.venvtx("remove", "flash-attn", "flashinfer-python", "--preview", "never",
                             env=dict(self.env, VENVTX_FAILPOINT="4"))
        self.assertEqual(killed.returncode, KILLED, killed.stdout + killed.stderr)
        self.assertIn(self.states()[2], ("started", "applied", "interrupted"))
        doc = self.gc("--keep", "0")
        self.assertEqual(doc["pruned"], [1, 2])
        self.assertEqual(self.log()[0]["pruned_from"], "rolled_back")
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertObjectsExactlyNeeded()
        self.assertVerifyClean()

    def test_gc_waits_for_the_locks(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        holder = "import fcntl, sys\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n" \
                 "print('held', flush=True)\nsys.stdin.readline()\n"
        for lock in (os.path.join(self.venv, ".lock"), os.path.join(self.venv, ".venvtx", "lock")):
            with self.subTest(lock=lock):
                child = subprocess.Popen(["python3", "-c", holder, lock], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
                try:
                    self.assertEqual(child.stdout.readline().strip(), "held")
                    before = self.store_snapshot()
                    proc = self.venvtx("gc", "--keep", "0")
                    self.assertOneLineError(proc, 5)
                    after = self.store_snapshot()
                    self.assertEqual(before[1], after[1])
                    self.assertEqual(before[0], after[0])
                finally:
                    child.stdin.close()
                    child.wait()
                    child.stdout.close()
        self.assertEqual(self.gc("--keep", "0")["pruned"], [1])

    def test_content_freed_by_gc_is_stored_again(self):
        template = os.path.join(self.tmp, "template")
        subprocess.run(["cp", "-a", self.venv, template], check=True)
        for kill in (None, "1"):
            with self.subTest(killed_gc=kill):
                shutil.rmtree(self.venv)
                subprocess.run(["cp", "-a", template, self.venv], check=True)
                before = tree_hash(self.venv)
                # Removed, stored (a removal leaves its files unhashed until a gc), undone, and
                # again: the second rollback copies (the first removal's entries name the same
                # objects), so the store still holds them.
                for _ in range(2):
                    self.assertEqual(self.venvtx("remove", "sglang", "flash-attn").returncode, 0)
                    self.assertEqual(self.gc("--keep", "20")["pruned"], [])
                    self.assertEqual(self.venvtx("rollback").returncode, 0)
                self.assertTreeEqual(before, tree_hash(self.venv))
                self.assertTrue(self.object_rows())
                proc = self.venvtx("gc", "--keep", "1", env=dict(self.env, VENVTX_FAILPOINT=kill) if kill else None)
                self.assertEqual(proc.returncode, KILLED if kill else 0, proc.stdout + proc.stderr)
                self.assertEqual(self.pruned_ids(), [1, 2, 3])
                self.assertEqual(self.object_rows(), {})
                # The same files again: their bytes must be stored again (rows and files), and a
                # gc (nothing to prune; leftovers collected) must leave them to tx 5.
                self.assertEqual(self.venvtx("remove", "sglang", "flash-attn").returncode, 0)
                self.assertEqual(self.gc("--keep", "20")["pruned"], [])
                self.assertEqual(self.missing_objects(), [], "objects tx 5 needs are gone")
                proc = self.venvtx("rollback")
                self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
                self.assertTreeEqual(before, tree_hash(self.venv))
                self.assertVerifyClean()
                self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
                self.assertEqual(self.venvtx("rollback").returncode, 0)
                self.assertTreeEqual(before, tree_hash(self.venv))


class BadInput(GcCase):
    def test_bad_values_exit_2_and_change_nothing(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        for args in (["--older-than", "3x"], ["--older-than", "-2d"], ["--older-than", "d"],
                     ["--max-size", "12Q"], ["--max-size", "12QB"], ["--max-size", "-5M"], ["--max-size", "lots"],
                     ["--auto", "maybe"], ["--keep", "-1"], ["--keep", "two"],
                     ["--set-policy", "--keep", "1", "--max-size", "12Q"]):
            with self.subTest(args=args):
                before = self.store_snapshot()
                proc = self.venvtx("gc", *args)
                self.assertOneLineError(proc, 2)
                after = self.store_snapshot()
                self.assertEqual(before[1], after[1], "gc %s changed the index: %s" % (args, proc.stdout))
                self.assertEqual(before[0], after[0])
                self.assertTreeEqual(before[2], after[2])

    def test_no_store(self):
        proc = self.venvtx("gc")
        self.assertOneLineError(proc, 2)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))
        proc = self.venvtx("gc", "--keep", "0", "--dry-run")
        self.assertOneLineError(proc, 2)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))


class GcSweep(test_crash.SweepCase, GcCase):
    """kill -9 at every step of a gc (sampled like test_crash), and ENOSPC / EIO at every step:
    an unpruned transaction never loses an object, `verify` is clean, and a second gc reaches
    exactly the store an uninterrupted gc leaves. Each kind of problem is its own subtest;
    GC_SWEEP_DETAIL=1 prints every point's."""
    ARGS = ["gc", "--keep", "2"]
    EXPECTED_PRUNED = [1, 2, 3, 4, 5]

    def template_with_leftovers(self):
        template = self.prepare(["remove", "sglang"], ["remove", "flash-attn"], ["rollback"],
                                ["remove", "nvidia-nccl-cu13", "flashinfer-python", "--no-probe"], ["rollback"],
                                ["remove", "nvidia-cusparselt-cu13", "--no-probe"], ["remove", "flash-attn"])
        store = os.path.join(template, ".venvtx")
        for rel in ("trash/3-77/a", "trash/3-77/sub/b", "staging/999/x", "preview/4242-1/upper/y"):
            os.makedirs(os.path.dirname(os.path.join(store, rel)), exist_ok=True)
            with open(os.path.join(store, rel), "w") as f:
                f.write(rel)
        return template

    def befores(self, template):
        """The tree before each committed transaction of the template, by replaying its
        rollbacks on a copy (each plain rollback restores the tree before what it undoes)."""
        self.fresh(template)
        befores = {}
        while True:
            proc = self.venvtx("rollback")
            if proc.returncode != 0:
                break
            tx = int(re.search(r"undoing tx (\d+)", proc.stdout).group(1))
            befores[tx] = tree_hash(self.venv)
        return befores

    def outcome(self):
        return (self.pruned_ids(), sorted(self.object_rows().items()), self.object_file_names(),
                sorted(self.states().items()))

    def check_after(self, where, expected_pruned, reference, walk_befores, problems):
        """The invariants after a killed or failed gc (and `recover`)."""
        pruned = self.pruned_ids()
        if pruned not in ([], expected_pruned):
            problems["pruned"].append("%s: pruned %s" % (where, pruned))
        missing = self.missing_objects()
        if missing:
            problems["missing"].append("%s: %d object(s) an unpruned transaction needs are gone" % (where, len(missing)))
        verify = self.venvtx("verify")
        if verify.returncode != 0:
            kinds = sorted(set(line.split(":")[0] for line in verify.stdout.splitlines() if ": " in line))
            problems["verify"].append("%s: verify exit %d (%s)" % (where, verify.returncode, ", ".join(kinds)))
        if walk_befores is not None:
            self.walk_unpruned(where, walk_befores, problems)
            return
        again = self.venvtx(*self.ARGS)
        if again.returncode != 0:
            problems["second gc"].append("%s: second gc exit %d: %s" % (where, again.returncode, again.stderr))
        elif self.outcome() != reference:
            problems["second gc"].append("%s: second gc's store differs from an uninterrupted gc's" % where)
        else:
            verify = self.venvtx("verify")
            if verify.returncode != 0:
                problems["second gc"].append("%s: verify after the second gc exit %d" % (where, verify.returncode))

    def walk_unpruned(self, where, befores, problems):
        live = set(self.live_ids())
        for tx in sorted(befores, reverse=True):
            if tx not in live:
                proc = self.venvtx("rollback")
                if proc.returncode != 2 or not REFUSED.search(proc.stderr):
                    problems["walk"].append("%s: rollback of pruned tx %d: exit %d %s" % (where, tx, proc.returncode, proc.stderr))
                return
            proc = self.venvtx("rollback")
            if proc.returncode != 0 or tree_hash(self.venv) != befores[tx]:
                problems["walk"].append("%s: rollback of tx %d: exit %d, tree restored: %s" % (
                    where, tx, proc.returncode, tree_hash(self.venv) == befores[tx]))
                return

    WHY = {
        "pruned": "a killed gc pruned something other than nothing or exactly what an uninterrupted gc prunes",
        "missing": "an unpruned transaction lost an object it needs",
        "walk": "rolling back the unpruned transactions did not restore their before-trees",
        "second gc": "a second gc did not reach the uninterrupted gc's store (objects, rows, states) or verify failed",
        "verify": "`venvtx verify` (after `recover`, before any further gc) is not clean: the object files a "
                  "gc interrupted after its index commit leaves are reported as stray files (exit 6)",
        "errors": "gc did not exit 0, or 1 with one line naming the injected error",
    }

    def report(self, problems, tried):
        print("\n  %s: %s" % (tried, "; ".join("%s: %d" % (k, len(v)) for k, v in problems.items())))
        if os.environ.get("GC_SWEEP_DETAIL"):
            for k, v in problems.items():
                for line in v:
                    print("    %s | %s" % (k, line.strip()))
        for check in ("pruned", "missing", "walk", "second gc", "verify", "errors"):
            with self.subTest(check=check):
                self.assertEqual(problems[check][:8], [], "%s; at %d point(s), the first listed"
                                 % (self.WHY[check], len(problems[check])))

    def reference(self, template):
        self.fresh(template)
        proc = self.venvtx(*self.ARGS)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        reference = self.outcome()
        self.assertVerifyClean("uninterrupted gc")
        self.assertEqual(self.missing_objects(), [])
        return reference

    def test_kill_at_every_step(self):
        template = self.template_with_leftovers()
        befores = self.befores(template)
        reference = self.reference(template)
        expected = reference[0]
        self.assertEqual(expected, self.EXPECTED_PRUNED)
        steps = test_crash.InjectedIoErrors.count_steps(self, template, self.ARGS)
        self.assertGreater(steps, 10)
        points = [p for p in range(1, steps + 1) if test_crash.sampled(p)]
        walks = {points[0], points[len(points) // 2], points[-1]}
        problems = {k: [] for k in ("pruned", "missing", "walk", "second gc", "verify", "errors")}
        for point in points:
            self.fresh(template)
            proc = self.venvtx(*self.ARGS, env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, KILLED, "step %d of %d" % (point, steps))
            recovered = self.venvtx("recover")
            self.assertEqual(recovered.returncode, 0, recovered.stderr)
            self.check_after("kill at step %d of %d" % (point, steps), expected, reference,
                             befores if point in walks else None, problems)
        self.report(problems, "%s: killed at %d of %d steps" % (" ".join(self.ARGS), len(points), steps))

    def test_enospc_and_eio_at_every_step(self):
        template = self.template_with_leftovers()
        reference = self.reference(template)
        expected = reference[0]
        steps = test_crash.InjectedIoErrors.count_steps(self, template, self.ARGS)
        problems = {k: [] for k in ("pruned", "missing", "walk", "second gc", "verify", "errors")}
        tried = 0
        for kind in ("ENOSPC", "EIO:persist"):
            for step in range(1, steps + 1):
                tried += 1
                self.fresh(template)
                proc = self.venvtx(*self.ARGS, env=dict(self.env, VENVTX_FAULT="%d:%s" % (step, kind)))
                where = "%s at step %d of %d" % (kind, step, steps)
                if proc.returncode not in (0, 1):
                    problems["errors"].append("%s: exit %d %s" % (where, proc.returncode, proc.stderr))
                elif proc.returncode == 1:
                    message = proc.stderr.strip()
                    if "\n" in message or not re.match(r"^venvtx: .*(No space left on device|Input/output error)",
                                                       message):
                        problems["errors"].append("%s: %r" % (where, message))
                self.check_after(where, expected, reference, None, problems)
        self.report(problems, "%s: %d injected I/O errors over %d steps" % (" ".join(self.ARGS), tried, steps))


if __name__ == "__main__":
    unittest.main()
