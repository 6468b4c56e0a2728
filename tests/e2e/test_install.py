"""Transactions around any installer: `venvtx install` and `venvtx run -- CMD` (issue 4)."""
import os
import subprocess
import sys
import time
import unittest

from support import VenvTestCase, tree_hash


class InstallCase(VenvTestCase):
    """In place where no probe is given (`--preview never`: the default previews every
    install and run, test_preview's to test), under the auto capture (touch, where the kernel
    allows it); the *Link subclasses run the same tests under --capture link."""
    CAPTURE = None

    def venvtx(self, *args, **kwargs):
        at = next((i for i, a in enumerate(args) if a in ("install", "run")), None)
        if at is not None and "--probe" not in args and "--preview" not in args:
            args = (*args[:at + 1], "--preview", "never", *args[at + 1:])
        if self.CAPTURE and at is not None:
            args = (*args[:at + 1], "--capture", self.CAPTURE, *args[at + 1:])
        return super().venvtx(*args, **kwargs)

    def setUp(self):
        super().setUp()
        self.use_story_wheels()

    def install(self, *specs, probe=None, extra=()):
        args = ["install", "--installer", "pip", *specs]
        if probe:
            args += ["--probe", probe]
        return self.venvtx(*args, *self.wheel_args, *extra)

    def torch_version(self):
        proc = self.python("import importlib.metadata as m; print(m.version('torch'))")
        return proc.stdout.strip()


class Install(InstallCase):
    def test_upgrade_needing_a_missing_library_fails_and_restores_exactly(self):
        before = tree_hash(self.venv)
        proc = self.install("torch==2.12.0", probe="import torch")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("libcufile.so.0", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertTrue(any("torch/__pycache__/" in p and p.endswith(".pyc") for p in before))
        self.assertIn("bin/torchrun", before)
        self.assertEqual(self.torch_version(), "2.11.0")

    def test_passing_upgrade_commits_and_rollback_restores_exactly(self):
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("install", "--installer", "pip", "torch==2.12.0", *self.wheel_args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["packages"], [{"name": "torch", "before": "2.11.0", "after": "2.12.0"}])
        self.assertEqual(self.torch_version(), "2.12.0")
        upgraded = tree_hash(self.venv)
        only_new = [p for p in upgraded if p not in before]
        self.assertTrue(any("torch-2.12.0.dist-info" in p for p in only_new))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        for path in only_new:
            self.assertFalse(os.path.lexists(os.path.join(self.venv, path)), path)
        self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
        self.assertTreeEqual(upgraded, tree_hash(self.venv))
        proc, log = self.venvtx_json("log")
        self.assertEqual([(t["kind"], t["state"]) for t in log],
                         [("rollback", "committed"), ("rollback", "undone"), ("install", "committed")])

    def test_rollback_to_across_three_transactions(self):
        states = [tree_hash(self.venv)]
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        states.append(tree_hash(self.venv))
        self.assertEqual(self.install("torch==2.12.0").returncode, 0)
        states.append(tree_hash(self.venv))
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("rollback", "--to", "1").returncode, 0)
        self.assertTreeEqual(states[1], tree_hash(self.venv))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(states[0], tree_hash(self.venv))

    def test_installer_failure_changes_nothing(self):
        before = tree_hash(self.venv)
        proc = self.install("no-such-package==9")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        # pip speaks first (its output is the user's to see); venvtx's own verdict is one line.
        self.assertRegex(proc.stderr.strip().splitlines()[-1], r"^venvtx: pip install exited with status 1 .*restored")
        self.assertTreeEqual(before, tree_hash(self.venv))


class Run(InstallCase):
    SCRIPT = ("set -e; site=$(echo lib/python3*/site-packages); "
              "rm $site/flash_attn/ops/__init__.py; "                      # delete
              "rm bin/sglang && printf '#!/bin/sh\\necho new\\n' > bin/sglang && chmod 755 bin/sglang; "  # replace
              "mkdir -p $site/newpkg && echo 'x = 1' > $site/newpkg/__init__.py; "    # add
              "echo added > bin/extra-tool")

    def test_run_is_captured_and_rolled_back_exactly(self):
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("run", "--", "sh", "-c", "cd \"$VIRTUAL_ENV\" && " + self.SCRIPT)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["kind"], "run")
        self.assertEqual(tx["files"]["removed"], 1)
        self.assertEqual(tx["files"]["modified"], 1)
        self.assertEqual(tx["files"]["added"], 2)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_in_place_append_is_captured(self):
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("run", "--", "sh", "-c", "echo '# appended' >> '%s'" % target)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["files"]["modified"], 1)
        self.assertIsNone(tx["message"])
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_failed_probe_after_in_place_edit_restores_exactly(self):
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--preview", "never", "--no-baseline", "--probe", "raise SystemExit(1)", "--",
                           "sh", "-c", "echo '# appended' >> '%s'; touch \"$VIRTUAL_ENV/bin/new-tool\"" % target)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("the venv is as it was before, but for anything the probe wrote itself (it ran on the live "
                      "venv)", proc.stdout)  # venvtx journals the command's changes, not the probe's
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_failing_probe_after_run_restores(self):
        before = tree_hash(self.venv)
        probe = "import os, flash_attn; assert os.path.exists(os.path.join(os.path.dirname(flash_attn.__file__), 'ops', '__init__.py'))"
        proc = self.venvtx("run", "--probe", probe, "--", "sh", "-c",
                           "cd \"$VIRTUAL_ENV\" && " + self.SCRIPT)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_command_failing_after_writing_is_undone(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--", "sh", "-c",
                           "cd \"$VIRTUAL_ENV\" && touch bin/half-done && rm bin/sglang && exit 1")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertRegex(proc.stderr.strip().splitlines()[-1], r"^venvtx: sh exited with status 1 .*restored")
        self.assertTreeEqual(before, tree_hash(self.venv))
        staging = os.path.join(self.venv, ".venvtx", "staging")
        self.assertEqual([f for _, _, files in os.walk(staging) for f in files], [])

    def test_dry_run_touches_nothing(self):
        proc = self.venvtx("run", "--dry-run", "--", "sh", "-c", "touch \"$VIRTUAL_ENV/x\"")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.venv, "x")))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))

    def test_run_without_a_command(self):
        proc = self.venvtx("run")
        self.assertOneLineError(proc, 2)


class TouchCapture(InstallCase):
    """What only watching the command as it runs can do."""

    def test_a_refused_command_that_renamed_a_directory_is_said_restored(self):
        """The renamed directory's files went back from linked pre-images; unlinking their other
        names then moved their ctime, which once made the check call them unrestored."""
        package = os.path.join(self.site, "flashinfer")
        os.makedirs(os.path.join(package, "cache"))
        for name in ("a.bin", "b.bin"):
            with open(os.path.join(package, "cache", name), "wb") as f:
                f.write(name.encode() * 100)
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--preview", "never", "--no-baseline", "--", "sh", "-c",
                           "mv '%s/cache' '%s/moved'; mkfifo '%s/fifo'" % (package, package, package))
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("refused", proc.stderr)
        self.assertIn("the venv is as it was before", proc.stderr)
        self.assertNotIn("NOT restored", proc.stderr)
        self.assertNotIn("restored the 0 paths", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc, tx = self.venvtx_json("show", "1")
        self.assertIs(tx["restored"], True)

    def test_moved_tree_written_in_place_then_deleted(self):
        # pip's uninstall stashes whole directories by renaming them; a write into a file of the
        # moved tree must not reach the pre-image kept (as a hard link) of its old name.
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--", "sh", "-c",
                           "cd \"$VIRTUAL_ENV\"/lib/python3*/site-packages && mv flashinfer fi.bak && "
                           "echo '# edited' >> fi.bak/__init__.py && chmod 600 fi.bak/__init__.py && "
                           "cp -r fi.bak flashinfer && rm -r fi.bak")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_package_replaced_with_a_new_subdirectory_rolls_back_and_redoes(self):
        # pip's upgrade: the old package directory stashed away, a new one made with a new
        # subdirectory inside; every new path is journaled once, so undo and redo are exact.
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--", "sh", "-c",
                           "cd \"$VIRTUAL_ENV\"/lib/python3*/site-packages && mv sglang sglang.stash && "
                           "mkdir -p sglang/sub && echo 'v = 2' > sglang/__init__.py && "
                           "touch sglang/sub/__init__.py && echo 'x = 1' > sglang/sub/deep.py && rm -r sglang.stash")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        upgraded = tree_hash(self.venv)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("rollback", "--redo")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(upgraded, tree_hash(self.venv))
        with self.store_index() as db:
            duplicates = db.execute("SELECT tx_id, path, COUNT(*) FROM entries GROUP BY tx_id, path "
                                    "HAVING COUNT(*) > 1").fetchall()
        self.assertEqual(duplicates, [])

    def test_changes_through_a_symlinked_directory_and_dir_fds(self):
        before = tree_hash(self.venv)
        lib64 = os.path.join(self.venv, "lib64")
        if not os.path.islink(lib64):
            os.symlink("lib", lib64)
            before = tree_hash(self.venv)
        rel_site = os.path.relpath(self.site, os.path.join(self.venv, "lib"))
        code = ("import os, sys; site = os.path.join(sys.argv[1], 'lib64', %r); "
                "fd = os.open(os.path.join(site, 'flash_attn'), os.O_RDONLY | os.O_DIRECTORY); "
                "os.unlink('__init__.py', dir_fd=fd); "
                "os.rename('ops', 'ops-renamed', src_dir_fd=fd, dst_dir_fd=fd); "
                "os.chdir(site); os.chmod('sglang/__init__.py', 0o600); "
                "open('sglang/__init__.py', 'a').write('# more')" % rel_site)
        proc = self.venvtx("run", "--", sys.executable, "-c", code, self.venv)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotEqual(before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_nothing_changes_after_the_command_ends(self):
        # A process the command left running cannot change the venv behind the transaction.
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--", "sh", "-c",
                           "(sleep 1; rm \"$VIRTUAL_ENV/bin/sglang\") >/dev/null 2>&1 & echo started")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        time.sleep(2)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_auto_capture_links_when_an_upgrade_rewrites_much_of_the_venv(self):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))
        from make_story_venv import write_wheel
        wheels = os.path.join(self.tmp, "bulky-wheels")
        os.mkdir(wheels)
        for version in ("1.0", "2.0"):
            files = {"bulky/m%04d.py" % i: "x = %d  # %s\n" % (i, version) for i in range(1500)}
            write_wheel(wheels, "bulky", version, "py3-none-any", files, top_level=["bulky"])
        links = ["--", "-q", "--no-index", "--find-links", wheels]
        pip = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "-q",
                              "bulky==1.0", *links[2:]], capture_output=True, text=True, env=self.env)
        self.assertEqual(pip.returncode, 0, pip.stderr)
        before = tree_hash(self.venv)
        proc = self.venvtx("-v", "install", "--installer", "pip", "bulky==2.0", *links)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertRegex(proc.stderr, r"capture: the named distributions hold \d+ of \d+ recorded files: link capture")
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("-v", "install", "--installer", "pip", "torch==2.12.0", *self.wheel_args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("recorded files: touch capture", proc.stderr)

    def test_capture_options(self):
        for args in (["--capture", "touch", "--copy"], ["--capture", "snapshot"]):
            proc = super().venvtx("run", *args, "--", "true")
            self.assertOneLineError(proc, 2)


class RunLink(Run):
    CAPTURE = "link"

    def test_in_place_append_is_captured(self):
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        append = ["run", "--", "sh", "-c", "echo '# appended' >> '%s'" % target]
        proc, tx = self.venvtx_json(*append)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("changed in place", tx["message"])
        self.assertIn("flashinfer/__init__.py", tx["message"])
        with open(target) as f:
            self.assertIn("# appended", f.read())
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json(append[0], "--copy", *append[1:])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["files"]["modified"], 1)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_failed_probe_after_in_place_edit_restores_exactly(self):
        # Link capture has no pre-image of a file written in place: it says so, restores the rest.
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        proc = self.venvtx("run", "--preview", "never", "--no-baseline", "--probe", "raise SystemExit(1)", "--",
                           "sh", "-c", "echo '# appended' >> '%s'; touch \"$VIRTUAL_ENV/bin/new-tool\"" % target)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("NOT restored: 1 path is not as before", proc.stdout)
        self.assertIn("changed in place without a pre-image", proc.stdout)
        self.assertIn("flashinfer/__init__.py", proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.venv, "bin", "new-tool")))


class PreImages(InstallCase):
    """A previewed upgrade keeps each replaced file's bytes by its inode: a file whose only other
    name is the store's hold of it costs no copy; one with a name outside the venv is copied, so
    a write through that name never reaches the store."""

    def upgrade(self):
        proc, tx = self.venvtx_json("install", "--installer", "pip", "torch==2.12.0", "--probe", "import sys",
                                    *self.wheel_args)
        if proc.returncode == 2 and "preview" in proc.stderr:
            self.skipTest("no private view here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with self.store_index() as db:
            return dict(db.execute("SELECT path, before_object FROM entries WHERE tx_id = ? AND "
                                   "before_object IS NOT NULL", (tx["id"],)).fetchall())

    def object_path(self, hex_digest):
        return os.path.join(self.venv, ".venvtx", "objects", hex_digest[:2], hex_digest[2:])

    def test_a_held_file_is_kept_by_its_hold_inode(self):
        self.assertEqual(self.venvtx("--quiet", "stamp").returncode, 0)
        holds = os.path.join(self.venv, ".venvtx", "holds")
        held = {os.lstat(os.path.join(holds, name)).st_ino for name in os.listdir(holds)}
        inodes = {os.path.relpath(os.path.join(d, f), self.venv): os.lstat(os.path.join(d, f)).st_ino
                  for d, _, files in os.walk(self.site) for f in files}
        replaced = {path: digest for path, digest in self.upgrade().items() if inodes.get(path) in held}
        self.assertIn(os.path.relpath(os.path.join(self.site, "torch", "version.py"), self.venv), replaced)
        for path, digest in replaced.items():
            self.assertEqual(inodes[path], os.lstat(self.object_path(digest)).st_ino, path + ": copied")

    def test_a_file_with_a_name_outside_is_copied(self):
        before = tree_hash(self.venv)
        version = os.path.join(self.site, "torch", "version.py")
        outside = os.path.join(self.tmp, "second-name.py")
        os.link(version, outside)
        replaced = self.upgrade()
        kept = self.object_path(replaced[os.path.relpath(version, self.venv)])
        self.assertNotEqual(os.lstat(kept).st_ino, os.lstat(outside).st_ino)
        with open(outside, "r+b") as f:  # in place, through the outside name
            f.write(b"# the user's edit\n")
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))


class InstallLink(Install):
    CAPTURE = "link"


if __name__ == "__main__":
    unittest.main()
