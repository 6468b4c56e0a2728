"""Remove what pip removes (issue 42): the uninstall situations of pip's own tests, rebuilt
offline on twin copies of one venv. Real `pip uninstall -y` on one, `venvtx remove` on the
other; the trees (this suite's own hashing) must agree, or differ exactly as docs/guarantees.md
says they deliberately do; then `venvtx rollback` must bring back the exact tree, and nothing
outside the venv may change. Peer tests cited per case: pip `src/pip/_internal/req/
req_uninstall.py` (compress_for_rename, UninstallPathSet), `tests/unit/test_req_uninstall.py`,
`tests/functional/test_uninstall.py`."""
import os
import shutil
import subprocess
import sys
import unittest

from support import VENVTX, drop_scratch, scratch, tree_hash, tree_diff, write_wheel


class Twins(unittest.TestCase):
    def setUp(self):
        self.tmp, self.in_memory = scratch("venvtx-parity-%s-" % self._testMethodName)
        self.wheels = os.path.join(self.tmp, "wheels")
        os.mkdir(self.wheels)
        self.env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1",
                        PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.env.pop("VIRTUAL_ENV", None)
        self.pip_venv = os.path.join(self.tmp, "pip")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", self.pip_venv], check=True)
        self.site_rel = os.path.relpath(self.site(self.pip_venv), self.pip_venv)

    def tearDown(self):
        drop_scratch(self.tmp, self.in_memory)

    def site(self, venv):
        lib = os.path.join(venv, "lib")
        return os.path.join(lib, [d for d in os.listdir(lib) if d.startswith("python")][0], "site-packages")

    def pip(self, venv, *args):
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(venv, "bin", "python"), *args],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc

    def install(self, *names):
        self.pip(self.pip_venv, "install", "-q", "--no-index", "--find-links", self.wheels, *names)

    def twin(self):
        """The venvtx copy of the pip venv, made now (after the setup both share)."""
        self.ours = os.path.join(self.tmp, "ours")
        subprocess.run(["cp", "-a", self.pip_venv, self.ours], check=True)
        self.original = tree_hash(self.ours)
        return self.ours

    def venvtx_on(self, venv, *args):
        return subprocess.run([VENVTX, "--venv", venv, *args], capture_output=True, text=True, env=self.env)

    def both_remove(self, *names):
        """pip uninstall -y on one twin, venvtx remove on the other; returns venvtx's process."""
        ours = self.twin()
        self.pip(self.pip_venv, "uninstall", "-y", *names)
        proc = self.venvtx_on(ours, "remove", "--no-probe", *names)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc

    def assertAgree(self, pip_only=(), ours_only=()):
        """The twins' trees agree but for `pip_only` (left by pip, not by venvtx) and `ours_only`."""
        theirs, ours = tree_hash(self.pip_venv), tree_hash(self.ours)
        left_by_pip = sorted(set(theirs) - set(ours))
        left_by_us = sorted(set(ours) - set(theirs))
        self.assertEqual((left_by_pip, left_by_us), (sorted(pip_only), sorted(ours_only)),
                         tree_diff(theirs, ours))
        for path in set(theirs) & set(ours):
            self.assertEqual(theirs[path], ours[path], path)

    def assertRollbackExact(self):
        proc = self.venvtx_on(self.ours, "rollback", "--no-probe")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.original, tree_hash(self.ours), tree_diff(self.original, tree_hash(self.ours)))

    def rel(self, *parts):
        return os.path.join(self.site_rel, *parts)

    def egg_info(self, name, files, pkg_files, version="1.0"):
        """A flat .egg-info install in the pip twin, as `setup.py install
        --single-version-externally-managed` left it: `files` in the egg-info, `pkg_files` (paths
        relative to site-packages) written with their names as content."""
        write_wheel(self.wheels, "bystander", "1.0", "py3-none-any", {"bystander/__init__.py": ""})
        self.install("bystander")
        site = self.site(self.pip_venv)
        for rel in pkg_files:
            path = os.path.join(site, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("# %s\n" % rel)
        info = os.path.join(site, "%s-%s-py3.11.egg-info" % (name, version))
        os.makedirs(info)
        files = dict({"PKG-INFO": "Metadata-Version: 1.1\nName: %s\nVersion: %s\n" % (name, version)}, **files)
        for file, text in files.items():
            with open(os.path.join(info, file), "w") as f:
                f.write(text)
        return info

    def with_pip(self):
        """The venv's own pip (bundled, offline), which venvtx runs for these."""
        subprocess.run([os.path.join(self.pip_venv, "bin", "python"), "-m", "ensurepip"], check=True,
                       env=self.env, capture_output=True)

    def easy_install_pth(self, *lines):
        with open(os.path.join(self.site(self.pip_venv), "easy-install.pth"), "w") as f:
            f.write("".join(line + "\n" for line in lines))

    def egg_link(self, name):
        """A legacy `setup.py develop` of `name` beside an installed bystander; returns the project."""
        write_wheel(self.wheels, "bystander", "1.0", "py3-none-any", {"bystander/__init__.py": ""})
        self.install("bystander")
        project = os.path.join(self.tmp, "project")
        os.makedirs(os.path.join(project, name + ".egg-info"))
        with open(os.path.join(project, name + ".egg-info", "PKG-INFO"), "w") as f:
            f.write("Metadata-Version: 1.1\nName: %s\nVersion: 1.0\n" % name)
        with open(os.path.join(self.site(self.pip_venv), name + ".egg-link"), "w") as f:
            f.write(project + "\n.")
        self.easy_install_pth("/some/other/project", project)
        return project


class SameAsPip(Twins):
    def test_empty_subdirectories_go_with_their_package(self):
        # compress_for_rename: a directory whose files all go is renamed away whole, an empty
        # subdirectory (a cache the package made at run time) with it.
        write_wheel(self.wheels, "emptydirs", "1.0", "py3-none-any",
                    {"emptydirs/__init__.py": "", "emptydirs/sub/deeper/mod.py": "x = 1\n"})
        self.install("emptydirs")
        os.makedirs(os.path.join(self.site(self.pip_venv), "emptydirs", "cache", "runs"))
        self.both_remove("emptydirs")
        self.assertAgree()
        self.assertRollbackExact()

    def test_a_data_install_leaves_the_directories_above_its_files(self):
        # compress_for_rename only considers the directories that hold a removed file: `share/`
        # and `include/site/...` above them stay, even empty.
        write_wheel(self.wheels, "datapkg", "1.0", "py3-none-any",
                    {"datapkg/__init__.py": "", "datapkg-1.0.data/headers/datapkg.h": "// h\n"},
                    data={"share/datapkg/thing.txt": "t\n", "share/datapkg/more/other.txt": "o\n"})
        self.install("datapkg")
        self.both_remove("datapkg")
        self.assertTrue(os.path.isdir(os.path.join(self.ours, "share")))
        self.assertAgree()
        self.assertRollbackExact()

    def test_a_record_path_outside_the_venv_is_skipped_by_name(self):
        # UninstallPathSet.add/_permitted: "Would not remove (outside of prefix)"; the rest goes.
        canary = os.path.join(self.tmp, "canary.txt")
        with open(canary, "w") as f:
            f.write("not the venv's\n")
        write_wheel(self.wheels, "escapee", "1.0", "py3-none-any", {"escapee/__init__.py": ""})
        self.install("escapee")
        record = os.path.join(self.site(self.pip_venv), "escapee-1.0.dist-info", "RECORD")
        with open(record, "a") as f:
            f.write("%s,,\n" % os.path.relpath(canary, self.site(self.pip_venv)))
        proc = self.both_remove("escapee")
        self.assertIn("not removing", proc.stderr)
        self.assertAgree()
        with open(canary) as f:
            self.assertEqual(f.read(), "not the venv's\n")
        self.assertRollbackExact()

    def test_a_record_path_through_a_directory_link_removes_the_link(self):
        # A RECORD path through a symlinked directory inside the package: pip resolves it, and
        # the package goes whole, the link with it (pip's walk does not enter the link).
        write_wheel(self.wheels, "linkpkg", "1.0", "py3-none-any",
                    {"linkpkg/__init__.py": "", "linkpkg/real/mod.py": "x = 1\n"})
        self.install("linkpkg")
        package = os.path.join(self.site(self.pip_venv), "linkpkg")
        os.symlink("real", os.path.join(package, "dirlink"))
        with open(os.path.join(self.site(self.pip_venv), "linkpkg-1.0.dist-info", "RECORD"), "a") as f:
            f.write("linkpkg/dirlink/mod.py,,\n")
        self.both_remove("linkpkg")
        self.assertAgree()
        self.assertRollbackExact()

    def test_a_package_with_files_it_does_not_list_keeps_its_directory(self):
        # compress_for_rename: a directory holding a file no RECORD lists is not removed whole;
        # only the listed files go.
        write_wheel(self.wheels, "userdata", "1.0", "py3-none-any",
                    {"userdata/__init__.py": "", "userdata/conf/defaults.toml": "a = 1\n"})
        self.install("userdata")
        with open(os.path.join(self.site(self.pip_venv), "userdata", "conf", "mine.toml"), "w") as f:
            f.write("b = 2\n")
        self.both_remove("userdata")
        self.assertAgree()
        self.assertRollbackExact()


    def test_an_egg_info_install_goes_by_its_installed_files(self):
        # req_uninstall.py, UninstallPathSet.from_dist (setuptools_flat_installation): the
        # egg-info, each path of installed-files.txt (relative to the egg-info), and the console
        # scripts of entry_points.txt; functional test_uninstall.py's legacy installs.
        self.egg_info("oldpkg", {
            "top_level.txt": "oldpkg\n",
            "entry_points.txt": "[console_scripts]\noldpkg-cli = oldpkg:main\n",
            "installed-files.txt": "../oldpkg/__init__.py\n../oldpkg/sub/mod.py\r\n\n../oldpkg_data/table.txt\n"
                                   "PKG-INFO\ntop_level.txt\nentry_points.txt\ninstalled-files.txt\n"},
            ["oldpkg/__init__.py", "oldpkg/sub/mod.py", "oldpkg/__pycache__/__init__.cpython-311.pyc",
             "oldpkg_data/table.txt"])
        with open(os.path.join(self.pip_venv, "bin", "oldpkg-cli"), "w") as f:
            f.write("#!/bin/sh\n")
        proc = self.both_remove("oldpkg")
        self.assertIn("oldpkg 1.0", proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.site(self.ours), "oldpkg")))
        self.assertFalse(os.path.exists(os.path.join(self.ours, "bin", "oldpkg-cli")))
        self.assertAgree()
        self.assertRollbackExact()

    def test_an_egg_info_without_installed_files_goes_by_its_top_level_names(self):
        # The same, its elif branch: top_level.txt's names less namespace_packages.txt, each a
        # package directory (whole) or a module (.py, .pyc, .pyo).
        self.egg_info("toppkg", {"top_level.txt": "toppkg\ntopmod\nnspkg\n", "namespace_packages.txt": "nspkg\n"},
                      ["toppkg/__init__.py", "toppkg/data/table.txt", "topmod.py", "topmod.pyc",
                       "nspkg/shared.py"])
        os.makedirs(os.path.join(self.site(self.pip_venv), "toppkg", "empty"))
        self.both_remove("toppkg")
        self.assertTrue(os.path.exists(os.path.join(self.site(self.ours), "nspkg", "shared.py")))
        self.assertAgree()
        self.assertRollbackExact()

    def test_an_egg_link_editable_goes_through_the_venvs_pip(self):
        # A legacy `setup.py develop`: pip removes the .egg-link and its easy-install.pth line
        # (UninstallPathSet.from_dist, develop_egg_link; add_pth); venvtx runs the venv's pip
        # for it, as a transaction that rollback undoes.
        project = self.egg_link("devpkg")
        self.with_pip()
        proc = self.both_remove("devpkg")
        self.assertIn("removed by the venv's pip", proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.site(self.ours), "devpkg.egg-link")))
        self.assertTrue(os.path.isdir(os.path.join(project, "devpkg.egg-info")))  # outside the venv
        self.assertAgree()
        self.assertRollbackExact()

    def test_an_egg_goes_through_the_venvs_pip(self):
        # easy_install's .egg directory, listed in easy-install.pth: pip removes it whole and
        # its line (installed_as_egg).
        write_wheel(self.wheels, "bystander", "1.0", "py3-none-any", {"bystander/__init__.py": ""})
        self.install("bystander")
        egg = os.path.join(self.site(self.pip_venv), "eggpkg-1.0-py3.11.egg")
        for rel, text in (("EGG-INFO/PKG-INFO", "Metadata-Version: 1.1\nName: eggpkg\nVersion: 1.0\n"),
                          ("EGG-INFO/top_level.txt", "eggpkg\n"), ("eggpkg/__init__.py", "x = 1\n")):
            os.makedirs(os.path.dirname(os.path.join(egg, rel)), exist_ok=True)
            with open(os.path.join(egg, rel), "w") as f:
                f.write(text)
        self.easy_install_pth("import sys; sys.__plen = len(sys.path)", "./eggpkg-1.0-py3.11.egg")
        self.with_pip()
        self.both_remove("eggpkg")
        self.assertAgree()
        self.assertRollbackExact()

    def test_a_distutils_egg_info_file_is_refused_as_pip_refuses_it(self):
        # req_uninstall.py: "Cannot uninstall X. It is a distutils installed project and thus we
        # cannot accurately determine which files belong to it": pip exits 1, venvtx 2.
        site = self.site(self.pip_venv)
        with open(os.path.join(site, "distpkg-1.0-py3.11.egg-info"), "w") as f:
            f.write("Metadata-Version: 1.0\nName: distpkg\nVersion: 1.0\n")
        ours = self.twin()
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(self.pip_venv, "bin", "python"),
                               "uninstall", "-y", "distpkg"], capture_output=True, text=True, env=self.env)
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("distutils", proc.stdout + proc.stderr)
        proc = self.venvtx_on(ours, "remove", "distpkg")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("a legacy install", proc.stderr)
        self.assertEqual(self.original, tree_hash(ours))
        self.assertAgree()

    def test_a_name_that_matches_nothing_is_already_gone(self):
        # pip warns "Skipping X as it is not installed" and exits 0: already gone is success
        # (issue 40, item 8), changed false, no history entry; --strict makes it exit 2 (no_match).
        write_wheel(self.wheels, "present", "1.0", "py3-none-any", {"present/__init__.py": ""})
        self.install("present")
        ours = self.twin()
        self.assertIn("not installed", self.pip(self.pip_venv, "uninstall", "-y", "absent").stderr)
        proc = self.venvtx_on(ours, "remove", "absent", "presnt")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("skipping 'absent'", proc.stderr)
        self.assertIn("did you mean 'present'", proc.stderr)
        self.assertIn("nothing to remove", proc.stdout)
        self.assertEqual(self.original, tree_hash(ours))
        self.assertFalse(os.path.exists(os.path.join(ours, ".venvtx")))
        proc = self.venvtx_on(ours, "remove", "--strict", "absent")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("no installed distribution matches 'absent'", proc.stderr)
        self.assertEqual(self.original, tree_hash(ours))
        self.pip(self.pip_venv, "uninstall", "-y", "absent", "present")
        proc = self.venvtx_on(ours, "remove", "absent", "present")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("skipping 'absent'", proc.stderr)
        self.assertAgree()
        self.assertRollbackExact()


class DeliberatelyNotAsPip(Twins):
    """The differences docs/guarantees.md names."""

    def test_a_file_another_distribution_lists_too_is_kept(self):
        # pip removes every path the RECORD lists, breaking the other distribution that lists it.
        write_wheel(self.wheels, "first", "1.0", "py3-none-any", {"sharedns/common.py": "x = 1\n",
                                                                  "first/__init__.py": ""})
        write_wheel(self.wheels, "second", "1.0", "py3-none-any", {"sharedns/common.py": "x = 1\n",
                                                                   "second/__init__.py": ""})
        self.install("first", "second")
        proc = self.both_remove("first")
        self.assertIn("second also owns it", proc.stdout)
        self.assertAgree(ours_only=[self.rel("sharedns"), self.rel("sharedns", "common.py"),  # its bytecode too
                                    self.rel("sharedns", "__pycache__"),
                                    self.rel("sharedns", "__pycache__", "common.%s.pyc" % sys.implementation.cache_tag)])
        self.assertRollbackExact()

    def test_bytecode_of_every_interpreter_goes_with_its_source(self):
        # pip removes the bytecode of its own interpreter's tag only (cache_from_source).
        write_wheel(self.wheels, "bytes", "1.0", "py3-none-any", {"bytes_pkg/__init__.py": "",
                                                                  "bytes_pkg/mod.py": "x = 1\n"})
        self.install("bytes")
        cache = os.path.join(self.site(self.pip_venv), "bytes_pkg", "__pycache__")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "mod.cpython-27.pyc"), "wb") as f:
            f.write(b"\x00" * 16)
        self.both_remove("bytes")
        self.assertAgree(pip_only=[self.rel("bytes_pkg"), self.rel("bytes_pkg", "__pycache__"),
                                   self.rel("bytes_pkg", "__pycache__", "mod.cpython-27.pyc")])
        self.assertRollbackExact()

    def test_both_dist_infos_of_one_name_go(self):
        # A torn upgrade leaves two dist-infos of one name. pip removes the one it finds and
        # leaves the other, which then lists files that are gone (a second uninstall is needed);
        # venvtx removes every distribution the name matches.
        write_wheel(self.wheels, "twice", "1.0", "py3-none-any", {"twice/__init__.py": "x = 1\n"})
        self.install("twice")
        site = self.site(self.pip_venv)
        old = os.path.join(site, "twice-0.9.dist-info")
        shutil.copytree(os.path.join(site, "twice-1.0.dist-info"), old)
        metadata = os.path.join(old, "METADATA")
        with open(metadata) as f:
            text = f.read().replace("Version: 1.0", "Version: 0.9")
        with open(metadata, "w") as f:
            f.write(text)
        proc = self.both_remove("twice")
        self.assertIn("twice 0.9", proc.stdout)
        self.assertIn("twice 1.0", proc.stdout)
        left = sorted(path for path in tree_hash(self.pip_venv) if ".dist-info" in path and "twice-" in path)
        self.assertEqual(len({path.split("/")[3] for path in left}), 1, left)  # pip left one of the two
        self.assertAgree(pip_only=left)
        self.assertRollbackExact()

    def test_an_egg_link_without_pip_or_named_with_others_is_refused(self):
        # venvtx removes an .egg-link only through the venv's own pip, on its own: without pip,
        # or beside a distribution venvtx removes itself, it says so and changes nothing.
        self.egg_link("devpkg")
        ours = self.twin()
        proc = self.venvtx_on(ours, "remove", "devpkg")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("the venv has no pip: `pip --python", proc.stderr)
        self.with_pip()
        ours = self.twin()
        proc = self.venvtx_on(ours, "remove", "devpkg", "bystander")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("remove it on its own", proc.stderr)
        self.assertEqual(self.original, tree_hash(ours))

    def test_a_record_that_lists_nothing_is_refused_as_pip_leaves_it(self):
        # req_uninstall.py: with no path to remove pip says "Can't uninstall 'X'. No files were
        # found to uninstall." and leaves it all (exit 0). venvtx refuses (exit 2), changing
        # nothing: taking the dist-info alone would leave the package's code, owned by nobody.
        write_wheel(self.wheels, "norecord", "1.0", "py3-none-any", {"norecord/__init__.py": "x = 1\n"})
        self.install("norecord")
        open(os.path.join(self.site(self.pip_venv), "norecord-1.0.dist-info", "RECORD"), "w").close()
        ours = self.twin()
        self.assertIn("No files were found to uninstall", self.pip(self.pip_venv, "uninstall", "-y", "norecord").stdout)
        proc = self.venvtx_on(ours, "remove", "--no-probe", "norecord")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("norecord 1.0's RECORD lists no file", proc.stderr)
        self.assertEqual(self.original, tree_hash(ours))
        self.assertAgree()


if __name__ == "__main__":
    unittest.main()
