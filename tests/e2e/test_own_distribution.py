"""venvtx installed into the venv it manages (`pip install venvtx`, as the wheel of
scripts/wheel.sh installs it) will not remove or replace its own running distribution without
--force: not by `remove`, not by a command under `run` (previewed, or in place and then put
back), not by an `install` that upgrades it, not by a `rollback` of the install that brought it.
The binary under test goes into a wheel laid out as scripts/wheel.sh lays it out, installed by
real pip; trees are compared with the tests' own hashing."""
import json
import os
import subprocess
import unittest
from pathlib import Path

from support import VENVTX, VenvTestCase, tree_diff, tree_hash, write_wheel


class OwnDistribution(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.wheels = os.path.join(self.tmp, "venvtx-wheels")
        os.makedirs(self.wheels)
        for version in ("0.1.0", "0.1.1"):
            write_wheel(self.wheels, "venvtx", version, "py3-none-manylinux_2_17_x86_64",
                        {"venvtx-%s.data/scripts/venvtx" % version: Path(VENVTX), "venvtx/__init__.py": ""})
        self.own_binary = os.path.join(self.venv, "bin", "venvtx")

    def pip_install_venvtx(self):
        subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                        "--find-links", self.wheels, "venvtx==0.1.0"], check=True, env=self.env)

    def own(self, *args):
        """The venvtx installed in the venv, run on that venv."""
        return subprocess.run([self.own_binary, "--venv", self.venv, *args], capture_output=True, text=True,
                              env=self.env, cwd=self.tmp, timeout=300)

    def assertRefused(self, proc, before):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("the venvtx running now (bin/venvtx)", proc.stderr)
        self.assertIn("--force", proc.stderr)
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))

    def test_remove_is_refused_then_forced(self):
        self.pip_install_venvtx()
        before = tree_hash(self.venv)
        self.assertRefused(self.own("remove", "venvtx"), before)
        self.assertRefused(self.own("remove", "venv*", "flash-attn", "--probe", "import torch"), before)
        self.assertRefused(self.own("remove", "venvtx", "--dry-run"), before)
        proc = self.own("--json", "remove", "venvtx")
        error = json.loads(proc.stdout)["error"]
        self.assertEqual((error["kind"], error["exit_code"]), ("own_distribution", 2))
        self.assertEqual(error["details"], {"distribution": "venvtx", "binary": "bin/venvtx",
                                            "path": "bin/venvtx"})
        proc = self.own("remove", "venvtx", "--force")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(self.own_binary))

    def test_a_command_that_uninstalls_it_is_refused_previewed_or_in_place(self):
        self.pip_install_venvtx()
        before = tree_hash(self.venv)
        uninstall = ["--", os.path.join(self.venv, "bin", "python"), "-m", "pip", "uninstall", "-y", "venvtx"]
        self.assertRefused(self.own("run", *uninstall), before)  # seen in the view's layer
        proc = self.own("run", "--preview", "never", *uninstall)  # seen once it ran, and put back
        self.assertRefused(proc, before)
        self.assertIn("restored", proc.stderr)
        self.assertEqual([tx["state"] for tx in json.loads(self.own("--json", "log").stdout)["transactions"]],
                         ["aborted"])

    def test_an_upgrade_of_itself_is_refused_then_forced(self):
        self.pip_install_venvtx()
        before = tree_hash(self.venv)
        upgrade = ["install", "venvtx==0.1.1", "--", "--no-index", "--find-links", self.wheels]
        self.assertRefused(self.own(*upgrade), before)
        self.assertRefused(self.own("install", "--dry-run", *upgrade[1:]), before)  # pip's own dry run
        self.assertRefused(self.own("install", "--dry-run", "--probe", "import torch", *upgrade[1:]), before)
        self.assertRefused(self.own("install", "--preview", "never", *upgrade[1:]), before)
        proc = self.own("install", "--force", *upgrade[1:])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("venvtx-0.1.1.dist-info", os.listdir(self.site))

    def test_a_rollback_of_the_install_that_brought_it_is_refused_then_forced(self):
        proc = self.venvtx("install", "venvtx==0.1.0", "--", "--no-index", "--find-links", self.wheels)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        before = tree_hash(self.venv)
        self.assertRefused(self.own("rollback"), before)
        self.assertRefused(self.own("rollback", "--dry-run"), before)
        proc = self.own("rollback", "--force")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(self.own_binary))

    def test_a_venvtx_from_elsewhere_is_not_held_back(self):
        self.pip_install_venvtx()
        proc = self.venvtx("remove", "venvtx")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(self.own_binary))


if __name__ == "__main__":
    unittest.main()
