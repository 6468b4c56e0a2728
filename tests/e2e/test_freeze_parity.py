"""`venvtx freeze` lists what `pip freeze --all` lists (issue 41, item 9): legacy `.egg-info`
installs (a setuptools directory with PKG-INFO, a distutils file that is PKG-INFO itself) are
distributions too, and of two dist-infos of one name pip sees the first in site-packages'
directory order (importlib.metadata's lookup) alone; the shadowed one stays in the state (its
bytes are restored like any other) but is not listed. Each venv is read by real pip. Undoing
an outside `.egg-info` directory install takes it away by its `installed-files.txt` (issue 42);
one that would take a distutils `.egg-info` file away is refused with the truth."""
import json
import os
import subprocess
import sys
import unittest

from support import VENVTX, tree_hash, write_wheel
from test_pip_parity import Twins


class FreezeAsPip(Twins):
    def venvtx(self, *args):
        proc = subprocess.run([VENVTX, "--venv", self.pip_venv, *args], capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout

    def pip_freeze(self):
        return sorted(self.pip(self.pip_venv, "freeze", "--all").stdout.split(), key=str.lower)

    def write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def legacy_installs(self, distutils=True):
        site = self.site(self.pip_venv)
        info = os.path.join(site, "old_pkg-1.0-py3.11.egg-info")
        self.write(os.path.join(info, "PKG-INFO"), "Metadata-Version: 1.1\nName: old-pkg\nVersion: 1.0\n")
        self.write(os.path.join(info, "installed-files.txt"), "../old_pkg/__init__.py\nPKG-INFO\n")
        self.write(os.path.join(site, "old_pkg", "__init__.py"), "")
        if distutils:
            self.write(os.path.join(site, "distpkg-2.5.egg-info"), "Metadata-Version: 1.0\nName: distpkg\nVersion: 2.5\n")

    def second_dist_info(self, name, version):
        """A second dist-info of an installed name, as an interrupted or concurrent install leaves."""
        info = os.path.join(self.site(self.pip_venv), "%s-%s.dist-info" % (name, version))
        self.write(os.path.join(info, "METADATA"), "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
        self.write(os.path.join(info, "RECORD"), "%s-%s.dist-info/METADATA,,\n" % (name, version))

    def test_legacy_installs_are_listed_with_their_versions(self):
        write_wheel(self.wheels, "modern", "1.0", "py3-none-any", {"modern/__init__.py": ""})
        self.install("modern")
        self.legacy_installs()
        self.venvtx("stamp")
        ours = sorted(self.venvtx("freeze").split(), key=str.lower)
        self.assertEqual(ours, self.pip_freeze())
        self.assertIn("old-pkg==1.0", ours)
        self.assertIn("distpkg==2.5", ours)

    def test_of_two_dist_infos_of_one_name_the_one_pip_sees_is_listed(self):
        for version in ("1.0", "3.0"):
            write_wheel(self.wheels, "twice", version, "py3-none-any", {"twice/__init__.py": ""})
        self.install("twice==1.0")
        for version in ("2.0", "3.0", "0.9"):
            self.second_dist_info("twice", version)
        self.venvtx("stamp")
        listed = self.pip_freeze()
        self.assertEqual(len([line for line in listed if line.startswith("twice==")]), 1, listed)
        self.assertEqual(sorted(self.venvtx("freeze").split(), key=str.lower), listed)
        dists = json.loads(self.venvtx("--json", "freeze"))["dists"]
        self.assertEqual(sorted((d["version"], d.get("shadowed", False)) for d in dists if d["normalized"] == "twice"),
                         sorted((v, "twice==" + v not in listed) for v in ("0.9", "1.0", "2.0", "3.0")))

    def test_an_outside_legacy_install_is_a_logged_change(self):
        self.venvtx("stamp")
        self.legacy_installs()
        log = self.venvtx("log")
        self.assertIn("old-pkg", log)
        self.assertIn("distpkg", log)
        self.assertNotIn("old-pkg", self.venvtx("freeze", "--at", "1"))
        self.assertIn("old-pkg==1.0", self.venvtx("freeze"))
        # Undoing it would remove a distutils install, whose files venvtx cannot know: refused
        # with the truth by the dry run as by the run, before either says it would undo anything.
        before = tree_hash(self.pip_venv)
        for dry in (["--dry-run"], []):
            proc = subprocess.run([VENVTX, "--venv", self.pip_venv, "rollback", "--no-probe", *dry],
                                  capture_output=True, text=True, env=self.env)
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertIn("a legacy install", proc.stderr)
            self.assertNotIn("undo", proc.stdout)
            self.assertEqual(tree_hash(self.pip_venv), before)

    def test_an_outside_egg_info_install_is_undone_exactly(self):
        write_wheel(self.wheels, "modern", "1.0", "py3-none-any", {"modern/__init__.py": ""})
        self.install("modern")
        self.venvtx("stamp")
        before = tree_hash(self.pip_venv)
        self.legacy_installs(distutils=False)
        self.assertIn("old-pkg", self.venvtx("log"))
        self.venvtx("rollback", "--no-probe")
        self.assertEqual(tree_hash(self.pip_venv), before)
        self.assertNotIn("old-pkg", self.venvtx("freeze"))


if __name__ == "__main__":
    unittest.main()
