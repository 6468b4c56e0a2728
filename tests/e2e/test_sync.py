"""`venvtx sync --to N` (issue 40, item 4): where venvtx holds no copy of a point's files (here
the store is on another filesystem, so nothing can be held), the venv is put in N's versions
through the installer as one probed, previewed, journaled transaction: what N lacks uninstalled,
N's exact versions installed. Real pip, real ELF loading (the story's torch loses its libraries
to a plain `pip uninstall`); versions compared with real `pip freeze --all`, trees with the
tests' own hashing."""
import json
import os
import shutil
import subprocess
import unittest

from support import ExternalStoreMixin, PlainPip, VenvTestCase, tree_hash
from test_crash import SweepCase


class Sync(ExternalStoreMixin, PlainPip, VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.wheels = os.path.join(self.tmp, "wheels")
        shutil.copytree(self.wheel_args[3], self.wheels)
        shutil.copytree(self.wheel_args[5], self.wheels, dirs_exist_ok=True)
        self.index = ["--", "--no-index", "--find-links", self.wheels]

    def frozen(self):
        proc = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "freeze", "--all"],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return sorted(proc.stdout.split())

    def ok(self, *args):
        proc = self.venvtx(*args, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc

    def imports_torch(self):
        return self.python("import torch").returncode == 0

    def test_a_plain_uninstall_nothing_held_is_put_back_through_the_installer(self):
        self.ok("stamp")
        before = self.frozen()
        self.pip("uninstall", "-y", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13")
        self.assertFalse(self.imports_torch())
        self.assertNotEqual(self.venvtx("rollback", "--probe", "import torch").returncode, 0)  # nothing held
        broken = tree_hash(self.venv)
        synced = self.ok("sync", "--to", "1", "--probe", "import torch", *self.index)
        self.assertIn("nvidia-nccl-cu13 ∅ → 2.28.9", synced.stdout)
        self.assertTrue(self.imports_torch())
        self.assertEqual(self.frozen(), before)
        log = json.loads(self.ok("--json", "log").stdout)["transactions"]
        self.assertEqual((log[0]["kind"], log[0]["state"]), ("sync", "committed"))
        self.assertTrue(log[0]["probe"]["passed"])
        # A sync is a transaction like any: its rollback is exact.
        self.ok("rollback", "--no-probe")
        self.assertTreeEqual(broken, tree_hash(self.venv))

    def test_a_version_changed_and_one_added_are_put_back(self):
        self.ok("stamp")
        before = self.frozen()
        self.pip_install("--upgrade", "torch==2.12.0")
        self.pip("uninstall", "-y", "sglang")
        self.assertNotEqual(self.frozen(), before)
        self.ok("sync", "--to", "1", "--no-probe", *self.index)
        self.assertEqual(self.frozen(), before)

    def test_a_failing_probe_leaves_the_venv_as_it_was(self):
        self.pip("uninstall", "-y", "nvidia-nccl-cu13")
        self.ok("stamp")  # entry 1: torch broken
        self.pip_install("nvidia-nccl-cu13")
        self.assertTrue(self.imports_torch())
        fixed = tree_hash(self.venv)
        proc = self.venvtx("sync", "--to", "1", "--probe", "import torch", *self.index, timeout=300)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(fixed, tree_hash(self.venv))
        self.assertTrue(self.imports_torch())

    def test_already_there_a_dry_run_and_an_installer_that_cannot_find_a_version(self):
        self.ok("stamp")
        proc = self.venvtx("--json", "sync", "--to", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["changed"], False)
        self.assertIn("nothing to sync", self.ok("sync", "--to", "1").stdout)
        self.pip("uninstall", "-y", "sglang")
        gone = tree_hash(self.venv)
        dry = self.ok("sync", "--to", "1", "--dry-run", "--no-probe", *self.index)
        self.assertIn("sglang ∅ →", dry.stdout)
        self.assertIn("dry run: nothing changed", dry.stdout)
        self.assertTreeEqual(gone, tree_hash(self.venv))
        failed = self.venvtx("sync", "--to", "1", "--no-probe", "--", "--no-index", timeout=300)  # no wheels
        self.assertEqual(failed.returncode, 2, failed.stdout + failed.stderr)
        self.assertIn("No matching distribution found for sglang", failed.stderr)  # pip speaks first
        self.assertRegex(failed.stderr.strip().splitlines()[-1], "^venvtx: sync exited with status 1 .*never changed")
        self.assertTreeEqual(gone, tree_hash(self.venv))
        self.assertOneLineError(self.venvtx("sync"), 2)  # --to is required


class SyncKills(ExternalStoreMixin, PlainPip, SweepCase):
    """kill -9 at every step of a sync up to the tenth, then at every SAMPLE_EVERY-th (all of
    them with VENVTX_FULL_SWEEPS=1), then `venvtx recover`: the venv is exactly as before the
    sync or as after it, and the index says which. The sync takes one distribution's files away
    (torch back to 2.11: pre-images to capture) and puts one back. The template has pip in it,
    as `python -m venv` makes one: beside pip's thousand recorded files torch's are few, so the
    sync is captured by touch (`--capture auto`), whose recovery this sweeps (in the suites'
    lean venv torch is a fifth of the files, and auto links)."""

    SAMPLE_EVERY = 16

    def store_dir(self):
        return self.store

    def template_has_history(self, template):
        return False  # the newest entry of an untouched copy is the outside one (final_state: None)

    def final_state(self):
        state = super().final_state()
        return None if state == "recorded" else state

    def fresh(self, template):
        super().fresh(template)
        shutil.rmtree(self.store, ignore_errors=True)
        subprocess.run(["cp", "-a", self.store + "-template", self.store], check=True)

    def test_kills(self):
        self.use_story_wheels()
        self.put_pip_inside()
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.pip("install", "-q", "--no-compile", "--upgrade", "torch==2.12.0", *self.wheel_args[1:])
        self.pip("uninstall", "-y", "nvidia-nccl-cu13")
        template = os.path.join(self.tmp, "template")
        os.rename(self.venv, template)
        os.rename(self.store, self.store + "-template")
        # --no-compile: bytecode embeds its source's mtime, so two clean runs would differ.
        self.sweep(template, ["sync", "--to", "1", "--preview", "never", "--probe", "import torch", "--",
                              "--no-compile", *self.wheel_args[1:]], 0, "committed")


if __name__ == "__main__":
    unittest.main()
