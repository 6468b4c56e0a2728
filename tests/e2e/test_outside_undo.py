"""Changes made outside venvtx undone to the exact bytes (issue 38): every recorded state holds
its files (a hard link in the store), so a plain `pip uninstall`, `pip install --upgrade` or a
uv-shaped removal (files hard-linked from a cache) after any venvtx command is undone by
`venvtx rollback`, and `rollback --to N` across them lands in N's state. Real pip, real ELF
loading, the wheels deleted before each rollback; trees compared with the tests' own hashing."""
import base64
import hashlib
import os
import shutil
import unittest

from support import ExternalStoreMixin, PlainPip, VenvTestCase, tree_hash


class OutsideUndo(PlainPip, VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        # pip installs from a copy of the wheels that is gone before any rollback: offline, no wheel.
        self.wheels = os.path.join(self.tmp, "wheels")
        template = self.wheel_args[3]
        shutil.copytree(template, self.wheels)
        shutil.copytree(self.wheel_args[5], self.wheels, dirs_exist_ok=True)

    def without_wheels(self):
        shutil.rmtree(self.wheels)

    def import_torch(self):
        return self.python("import torch").returncode == 0

    def rollback(self, *args):
        proc, document = self.venvtx_json("rollback", *args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return document

    def assertClean(self):
        proc = self.venvtx("status", "--files")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


class PlainPipChanges(OutsideUndo):
    def test_a_plain_pip_uninstall_is_undone_to_the_exact_bytes(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        tree = tree_hash(self.venv)
        self.pip("uninstall", "-q", "-y", "nvidia-cusparselt-cu13", "nvidia-nvshmem-cu13")
        self.assertFalse(self.import_torch())
        self.without_wheels()
        tx = self.rollback()
        self.assertEqual(tx["undoes"], 2, tx)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertTrue(self.import_torch())
        self.assertClean()
        shown = self.venvtx("show", "2").stdout  # undone, still the outside change it was
        self.assertIn("2: changed outside venvtx\n  detected ", shown)
        self.assertIn("  window   between ", shown)
        self.assertIn("  undone by tx 3\n", shown)
        # The rollback is a transaction like any: redo it, and the venv is as pip left it.
        self.rollback("--redo")
        self.assertFalse(self.import_torch())
        self.assertEqual(self.rollback()["undoes"], 2)
        self.assertTreeEqual(tree, tree_hash(self.venv))

    def test_a_plain_pip_upgrade_is_undone_to_the_exact_bytes(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        tree = tree_hash(self.venv)
        self.pip_install("--upgrade", "torch==2.12.0")
        self.without_wheels()
        proc = self.venvtx("rollback", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("undoing entry 2 (outside)", proc.stdout)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertClean()

    def test_a_rollback_whose_probe_fails_changes_nothing(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.pip("uninstall", "-q", "-y", "flash-attn")
        tree = tree_hash(self.venv)
        # passes now, fails once flash-attn is back
        probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('flash_attn') is not None)"
        for where in ([], ["--preview", "never"]):  # in a private view, then on the live venv
            proc = self.venvtx("rollback", "--probe", probe, *where)
            self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
            # every file, its mode too: flash-attn's INSTALLER has the bytes of every other
            # distribution's, whose inode the hold is; restoring must not chmod those
            self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(self.python("import flash_attn").returncode, 0)

    def test_an_older_outside_entry_alone(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        tree = tree_hash(self.venv)
        self.pip("uninstall", "-q", "-y", "flash-attn")
        self.assertEqual(self.venvtx("log").returncode, 0)
        self.pip("uninstall", "-q", "-y", "sglang")
        self.without_wheels()
        self.assertEqual(self.rollback("2")["undoes"], 2)  # flash-attn back, sglang still gone
        self.assertEqual(self.python("import flash_attn").returncode, 0)
        self.assertNotEqual(self.python("import sglang").returncode, 0)
        self.assertEqual(self.rollback("3")["undoes"], 3)
        self.assertTreeEqual(tree, tree_hash(self.venv))

    def test_an_outside_entry_changed_since_is_refused_alone(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.pip("uninstall", "-q", "-y", "flash-attn")
        self.assertEqual(self.venvtx("log").returncode, 0)
        self.pip_install("flash-attn")
        tree = tree_hash(self.venv)
        proc = self.venvtx("rollback", "2")
        self.assertOneLineError(proc, 2)
        self.assertIn("refusing to undo entry 2 alone: flash-attn changed since", proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))


class RollbackToAcrossOutside(OutsideUndo):
    def test_every_point_is_reached_exactly(self):
        trees = {}
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        trees[1] = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)  # tx 2
        trees[2] = tree_hash(self.venv)
        self.pip("uninstall", "-q", "-y", "flash-attn")  # entry 3, recorded by the next command
        trees[3] = tree_hash(self.venv)
        proc = self.venvtx("install", "torch==2.12.0", "--", "--no-index", "--find-links", self.wheels)  # tx 4
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        trees[4] = tree_hash(self.venv)
        self.pip("uninstall", "-q", "-y", "nvidia-nccl-cu13")  # entry 5
        self.without_wheels()
        kinds = {e["id"]: e["kind"] for e in self.venvtx_json("log")[1]}
        self.assertEqual(kinds, {1: "stamp", 2: "remove", 3: "outside", 4: "install", 5: "outside"})
        for point in (4, 3, 2, 1):
            proc = self.venvtx_json("rollback", "--to", str(point), "--dry-run")[0]
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            tx = self.rollback("--to", str(point))
            self.assertIsNone(tx.get("not_at_target"), tx)
            self.assertTreeEqual(trees[point], tree_hash(self.venv))
            self.assertClean()
        self.assertTrue(self.import_torch())


class UvShaped(OutsideUndo):
    """uv installs by hard link from its cache: every file has a second name outside the venv."""

    def uv_shape(self, name):
        """Makes `name`'s files as uv leaves them: INSTALLER says uv, each file a link into a cache."""
        cache = os.path.join(self.tmp, "uv-cache", "archive-v0", name)
        dist_info = [d for d in os.listdir(self.site) if d.endswith(".dist-info") and
                     d.lower().replace("_", "-").startswith(name + "-")][0]
        record_path = os.path.join(self.site, dist_info, "RECORD")
        with open(os.path.join(self.site, dist_info, "INSTALLER"), "w") as f:
            f.write("uv\n")
        rows = []
        with open(record_path) as f:
            for line in f.read().splitlines():
                path = line.rsplit(",", 2)[0]
                full = os.path.normpath(os.path.join(self.site, path))
                if path.endswith("/RECORD") or path.endswith("/INSTALLER") or "__pycache__" in path:
                    if path.endswith("/INSTALLER"):
                        data = open(full, "rb").read()
                        digest = hashlib.sha256(data).digest()
                        line = "%s,sha256=%s,%d" % (path, base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
                                                    len(data))
                    rows.append(line)
                    continue
                rows.append(line)
                cached = os.path.join(cache, path.replace("../", "up/"))
                os.makedirs(os.path.dirname(cached), exist_ok=True)
                shutil.copy2(full, cached)
                os.unlink(full)
                os.link(cached, full)
        with open(record_path, "w") as f:
            f.write("\n".join(rows) + "\n")
        return cache

    def cache_hashes(self, cache):
        """path -> (mode, sha256) of every file in the cache: uv's own, which venvtx must not touch."""
        found = {}
        for d, _, files in os.walk(cache):
            for f in files:
                path = os.path.join(d, f)
                with open(path, "rb") as data:
                    found[path] = (os.lstat(path).st_mode, hashlib.sha256(data.read()).hexdigest())
        return found

    def test_a_uv_shaped_removal_is_undone_and_the_cache_is_untouched(self):
        cache = self.uv_shape("flash-attn")
        cached = self.cache_hashes(cache)
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        tree = tree_hash(self.venv)
        self.pip("uninstall", "-q", "-y", "flash-attn")  # unlinks, as uv does
        self.without_wheels()
        self.assertEqual(self.rollback()["undoes"], 2)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertEqual(cached, self.cache_hashes(cache))
        self.assertClean()


class ChangedInPlace(OutsideUndo):
    def test_a_held_file_written_in_place_is_named_and_never_restored(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        edited = os.path.join(self.site, "flash_attn", "__init__.py")
        with open(edited, "a") as f:  # an editor writing through the venv's name of the held inode
            f.write("# edited\n")
        self.pip("uninstall", "-q", "-y", "flash-attn")
        tree = tree_hash(self.venv)
        proc = self.venvtx("rollback")
        self.assertOneLineError(proc, 6)
        self.assertIn("flash_attn/__init__.py changed in place since venvtx held it", proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        proc, tx = self.venvtx_json("rollback", "--force")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn("flash_attn/__init__.py", tx["not_at_target"])
        self.assertFalse(os.path.exists(edited))  # left as it is: gone, never the edited bytes as "restored"
        self.assertTrue(os.path.isdir(os.path.join(self.site, "flash_attn")))


class HeldAsCopies(ExternalStoreMixin, OutsideUndo):
    """A store on another filesystem: no link can reach it, so nothing is held (status says so)
    until `config hold copy`; then each held file is a copy, and an edit in place of the venv's
    file after the hold no longer reaches it."""

    def test_copies_only_when_asked_and_then_exact(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.assertIn("not held: the store is on another filesystem than the venv (`venvtx config hold copy`",
                      self.venvtx("status").stdout)
        held = self.venvtx_json("status")[1]["held"]
        self.assertGreater(held["unheld_files"], 50, held)
        self.assertEqual(self.venvtx("config", "hold", "copy").returncode, 0)
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        proc, status = self.venvtx_json("status")
        self.assertEqual((status["held"]["copies"], status["held"]["unavailable"]), (True, None))
        self.assertEqual(status["held"]["dists"], status["held"]["of"])
        self.assertIn("held as copies: the files of all", self.venvtx("status").stdout)
        tree = tree_hash(self.venv)
        edited = os.path.join(self.site, "flash_attn", "__init__.py")
        with open(edited) as f:
            original = f.read()
        with open(edited, "a") as f:  # in place: a copy made before it keeps the bytes the state had
            f.write("# edited\n")
        self.pip("uninstall", "-q", "-y", "flash-attn", "nvidia-cusparselt-cu13")
        self.assertFalse(self.import_torch())
        self.without_wheels()
        self.rollback()
        with open(edited) as f:
            self.assertEqual(f.read(), original)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertTrue(self.import_torch())
        self.assertClean()
        proc = self.venvtx("config", "hold", "reflink")
        self.assertOneLineError(proc, 2)
        self.assertIn("hold takes link or copy", proc.stderr)


if __name__ == "__main__":
    unittest.main()
