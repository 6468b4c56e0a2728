"""The journal (the SQLite index) cut short: every command that reads it gives a clear one-line
error or works, never crashes, and never touches the venv (issue 3, torn input)."""
import os
import shutil
import subprocess

from support import VenvTestCase, stat_manifest, tree_hash


class TornIndex(VenvTestCase):
    def test_index_cut_at_many_points(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        store = os.path.join(self.venv, ".venvtx")
        # Fold the WAL into the main file so the cut hits the whole journal.
        subprocess.run(["sqlite3", os.path.join(store, "index.sqlite"), "PRAGMA wal_checkpoint(TRUNCATE);"],
                       check=True, capture_output=True)
        pristine = os.path.join(self.tmp, "index.pristine")
        shutil.copyfile(os.path.join(store, "index.sqlite"), pristine)
        size = os.path.getsize(pristine)
        before = tree_hash(self.venv)
        unmoved = stat_manifest(self.venv)  # while it holds, the tree is `before` without hashing it
        cuts = sorted(set(list(range(0, 200, 7)) + list(range(0, size, 1024)) + [size - 1]))
        outcomes = {}
        for cut in cuts:
            for name in ("index.sqlite-wal", "index.sqlite-shm"):
                if os.path.exists(os.path.join(store, name)):
                    os.unlink(os.path.join(store, name))
            with open(pristine, "rb") as f:
                data = f.read(cut)
            with open(os.path.join(store, "index.sqlite"), "wb") as f:
                f.write(data)
            for args in (["log"], ["show", "1"], ["rollback"]):
                proc = self.venvtx(*args)
                self.assertGreaterEqual(proc.returncode, 0, "cut %d: %s crashed: %s" % (cut, args, proc.stderr))
                if proc.returncode != 0:
                    lines = proc.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, "cut %d: %s: %r" % (cut, args, proc.stderr))
                    self.assertTrue(lines[0].startswith("venvtx: "), lines[0])
                outcomes[proc.returncode] = outcomes.get(proc.returncode, 0) + 1
                if args[0] == "rollback" and proc.returncode != 0 and stat_manifest(self.venv) != unmoved:
                    self.assertEqual(before, tree_hash(self.venv), "cut %d: a failed rollback changed the venv" % cut)
                if args[0] == "rollback" and proc.returncode == 0:
                    # Only an index that still held the transactions can undo one; put the venv back.
                    self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
                    self.assertEqual(before, tree_hash(self.venv), "cut %d: rollback and redo changed the venv" % cut)
                    unmoved = stat_manifest(self.venv)
        print("\n  index cut at %d points of %d bytes: exit codes %s" % (len(cuts), size, outcomes))
