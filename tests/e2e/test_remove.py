"""remove -> probe -> exact restore, commit, rollback, log/show, dedup (issue 2, Done when 2-4)."""
import glob
import os
import re
import unittest

from support import REPO, VenvTestCase, tree_hash


class FailedProbeRestores(VenvTestCase):
    def test_removing_torch_providers_fails_probe_and_restores_exactly(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "nvidia-*-cu13", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertRegex(proc.stdout, r"ImportError: .*(cannot open shared object file|undefined symbol)")
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.python("import torch").returncode, 0)

    def test_rolled_back_transaction_is_logged_with_probe_report(self):
        self.venvtx("remove", "nvidia-*-cu13", "--preview", "never", "--probe", "import torch")
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(len(log), 1)
        tx = log[0]
        self.assertEqual((tx["kind"], tx["state"]), ("remove", "rolled_back"))
        self.assertFalse(tx["probe"]["passed"])
        self.assertIn("ImportError", tx["probe"]["error"])
        self.assertTrue(tx["baseline"]["passed"])
        names = sorted(p["name"] for p in tx["packages"])
        self.assertEqual(names, ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13",
                                 "nvidia-nvshmem-cu13"])
        self.assertTrue(all(p["after"] is None and p["before"] for p in tx["packages"]))


class CommitAndRollback(VenvTestCase):
    def test_remove_commits_and_rollback_restores_exactly(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "sglang", "flash*", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        after = tree_hash(self.venv)
        gone = [p for p in before if p not in after]
        self.assertIn("bin/sglang", gone)
        self.assertIn("share/flashinfer/config.json", gone)
        self.assertTrue(any(p.endswith("sglang-0.5.5.dist-info/RECORD") for p in gone))
        self.assertTrue(any("sglang/__pycache__/" in p and p.endswith(".pyc") for p in gone))
        self.assertTrue(any(p.endswith("flash_attn-2.8.3.dist-info") for p in gone))
        self.assertFalse([p for p in after if p not in before], "remove added files")
        self.assertTrue(any(p.endswith("torch/__init__.py") for p in after))
        self.assertNotEqual(self.python("import sglang").returncode, 0)

        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.python("import sglang, flashinfer, flash_attn").returncode, 0)

        proc, log = self.venvtx_json("log")
        self.assertEqual([(t["id"], t["kind"], t["state"]) for t in log],
                         [(2, "rollback", "committed"), (1, "remove", "undone")])
        self.assertEqual(log[1]["undone_by"], 2)
        for tx in log:
            for field in ("id", "kind", "state", "started_at", "finished_at", "argv", "packages",
                          "files", "probe", "undone_by"):
                self.assertIn(field, tx)
        self.assertRegex(log[1]["started_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(log[1]["argv"][:2], ["venvtx", "--venv"])
        self.assertEqual(log[1]["files"]["removed"], len([p for p in gone if before[p][0] != "dir"]))
        self.assertEqual(log[0]["files"]["added"], log[1]["files"]["removed"])

        proc, shown = self.venvtx_json("show", "1")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(shown["id"], 1)
        self.assertEqual(sorted(p["name"] for p in shown["packages"]),
                         ["flash-attn", "flashinfer-python", "sglang"])
        self.assertTrue(shown["probe"]["passed"])

        human = self.venvtx("log").stdout
        self.assertRegex(human, r"2\s+committed\s+rollback")
        self.assertRegex(human, r"1\s+undone\s+remove")

    def test_repeated_rollback_walks_back(self):
        before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        middle = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(middle, tree_hash(self.venv))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("rollback")
        self.assertOneLineError(proc, 2)

    def test_rollback_to_undoes_everything_after(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        after_first = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flashinfer-python").returncode, 0)
        self.assertEqual(self.venvtx("rollback", "--to", "1").returncode, 0)
        self.assertTreeEqual(after_first, tree_hash(self.venv))


class StoreElsewhere(VenvTestCase):
    """--store on another filesystem (/dev/shm): no rename crosses it, a copy does."""

    def setUp(self):
        super().setUp()
        if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(self.tmp).st_dev:
            self.skipTest("no second filesystem at /dev/shm")
        import tempfile
        self.store = tempfile.mkdtemp(prefix="venvtx-store-", dir="/dev/shm")
        self.addCleanup(__import__("shutil").rmtree, self.store, True)

    def test_failed_probe_commit_and_rollback_across_filesystems(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("--store", self.store, "remove", "nvidia-*-cu13", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("--store", self.store, "remove", "sglang").returncode, 0)
        proc = self.venvtx("--store", self.store, "run", "--", "sh", "-c", "rm \"$VIRTUAL_ENV/bin/torchrun\"")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.venvtx("--store", self.store, "rollback").returncode, 0)
        self.assertEqual(self.venvtx("--store", self.store, "rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))


class StoreDetails(VenvTestCase):
    def test_a_rotten_object_is_replaced_by_a_fresh_capture(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("gc").returncode, 0)  # stores what the removal left unhashed
        with self.store_index() as db:  # a module's bytes: the wheel brings the same ones back
            hex = db.execute("SELECT before_object FROM entries WHERE path LIKE '%sglang/launch_server.py'").fetchone()[0]
        rotten = os.path.join(self.venv, ".venvtx", "objects", hex[:2], hex[2:])
        os.chmod(rotten, 0o644)
        with open(rotten, "r+b") as f:
            byte = f.read(1)
            f.seek(0)
            f.write(bytes([byte[0] ^ 0xFF]) if byte else b"x")
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)  # never restored silently
        self.use_story_wheels()
        proc = self.venvtx("install", "sglang", *self.wheel_args)  # the same bytes, from the wheel
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc = self.venvtx("remove", "sglang")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.venvtx("verify").returncode, 6)  # removed, not hashed yet: still rotten
        self.assertEqual(self.venvtx("gc").returncode, 0)
        self.assertEqual(self.venvtx("verify").returncode, 0)  # the fresh capture replaced it

    def test_remove_rollback_remove_adds_no_objects(self):
        for stored in (False, True):  # left unhashed as removed, or stored as objects by a gc
            with self.subTest(stored=stored):
                self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
                if stored:
                    self.assertEqual(self.venvtx("gc").returncode, 0)
                first = self.object_files()
                self.assertEqual(len(first) > 0, stored)
                self.assertEqual(self.staged_files() == [], stored)
                self.assertEqual(self.venvtx("rollback").returncode, 0)
                self.assertEqual(self.object_files(), [])  # moved back into the venv, not copied
                self.assertEqual(self.staged_files(), [])
                self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
                if stored:
                    self.assertEqual(self.venvtx("gc").returncode, 0)
                self.assertEqual(self.object_files(), first)
                with self.store_index() as db:
                    rows = db.execute("SELECT COUNT(*) FROM objects").fetchone()[0]
                self.assertEqual(rows, len(first))
                self.assertEqual(self.venvtx("rollback").returncode, 0)
                if not stored:  # (stored: the first removal's entries name them too, so they are copied)
                    self.assertEqual(self.object_files(), [])

    def staged_files(self):
        staging = os.path.join(self.venv, ".venvtx", "staging")
        return sorted(os.path.join(d, f) for d, _, files in os.walk(staging) for f in files)

    def test_schema_version_comes_from_migrations(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        numbers = [int(os.path.basename(p)[:4]) for p in glob.glob(os.path.join(REPO, "migrations", "*.sql"))]
        with self.store_index() as db:
            version = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        self.assertEqual(version, max(numbers))
        self.assertEqual(integrity, "ok")

    def test_objects_are_named_by_their_sha256(self):
        import hashlib
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("gc").returncode, 0)  # stores what the removal left unhashed
        self.assertTrue(self.object_files())
        for path in self.object_files():
            name = os.path.basename(os.path.dirname(path)) + os.path.basename(path)
            with open(path, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), name)


class GuardRails(VenvTestCase):
    """Issue 13: the venv's installer is not removed without --force; a staying distribution
    that requires a removed one is named before anything moves."""

    def test_removing_everything_is_refused_for_pip(self):
        self.put_pip_inside()
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "*")
        self.assertOneLineError(proc, 2)
        self.assertIn("refusing to remove pip", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))

    def test_force_removes_pip(self):
        self.put_pip_inside()
        proc = self.venvtx("remove", "pip", "--force")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotEqual(self.python("import pip").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(self.python("import pip").returncode, 0)

    def test_a_staying_dependent_is_named(self):
        proc = self.venvtx("remove", "flashinfer-python", "--no-baseline")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("warning: sglang 0.5.5 stays but requires flashinfer-python (flashinfer-python)", proc.stdout)
        proc, plan = self.venvtx_json("remove", "nvidia-*-cu13", "--dry-run")
        self.assertEqual(sorted((b["dependent"], b["removed"]) for b in plan["broken_requirements"]),
                         [("torch 2.11.0", "nvidia-cudnn-cu13"), ("torch 2.11.0", "nvidia-cusparselt-cu13"),
                          ("torch 2.11.0", "nvidia-nccl-cu13"), ("torch 2.11.0", "nvidia-nvshmem-cu13")])
        # setuptools wants pip only for its 'testing' extra, which pip never records as installed
        proc, plan = self.venvtx_json("remove", "pip", "--force", "--dry-run")
        self.assertEqual(plan["broken_requirements"], [])
        proc, plan = self.venvtx_json("remove", "sglang", "--dry-run")
        self.assertEqual(plan["broken_requirements"], [])


if __name__ == "__main__":
    unittest.main()
