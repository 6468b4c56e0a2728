"""A reader never sees half a package: venvtx switches each top-level entry a change touches
(a package directory, a dist-info, a script) into place at once. A reader reads "bigpkg"
(3,000 modules, each stating the package's version) from the live venv in a loop, as an
importer that holds the package's directory would: every module's version, the module count,
and a bigpkg dist-info present. It reads during a previewed install upgrade, its rollback, a
failing in-place upgrade's restore, and a previewed `rollback --probe`: no read is mixed or
failed. The same reader during plain `pip install` of the same upgrade does see broken reads,
so it can tell. Trees are compared with the tests' own hashing; the path-by-path fallback (a
filesystem without RENAME_EXCHANGE), a uv-shaped venv (every file with a second name outside
it) and a file written into a package while it switches are checked too, and kill -9, ENOSPC
and EIO are swept over switched changes."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import test_crash
from support import VENVTX, VenvTestCase, tree_diff, tree_hash, write_wheel

READS_AT_LEAST = 10

READER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "package_reader.py")


def switch_leftovers(venv):
    return [os.path.join(d, n) for d, dirs, files in os.walk(venv) for n in dirs + files if n.startswith(".venvtx-sw-")]


class Reads:
    """The reader's verdicts on reads made wholly between `start` and `end`."""

    def __init__(self, lines, start, end):
        inside = [line.split() for line in lines if start <= float(line.split()[0]) and float(line.split()[1]) <= end]
        self.count = len(inside)
        self.mixed = sum(r[2] == "mixed" for r in inside)
        self.failed = sum(r[2] == "failed" for r in inside)

    def __repr__(self):
        return "%d reads, %d mixed, %d failed" % (self.count, self.mixed, self.failed)


class BigPkgCase(VenvTestCase):
    """A venv with bigpkg 1.0 (MODULES modules) installed by pip, and wheels of 2.0 and of a
    3.0 whose import fails."""

    MODULES = 200

    def setUp(self):
        super().setUp()
        self.wheels = os.path.join(self.tmp, "bigpkg-wheels")
        os.makedirs(self.wheels)
        for version, init in (("1.0", ""), ("2.0", ""), ("3.0", "raise ImportError('bigpkg 3.0 is broken')\n")):
            files = {"bigpkg/__init__.py": init}
            files.update({"bigpkg/m%05d.py" % i: 'VERSION = "%s"\n' % version for i in range(self.MODULES)})
            write_wheel(self.wheels, "bigpkg", version, "py3-none-any", files, top_level=["bigpkg"])
        self.env["PIP_CONFIG_FILE"] = os.devnull
        self.env["PIP_NO_CACHE_DIR"] = "1"
        self.wheel_args = ["--", "--no-index", "--find-links", self.wheels]
        self.pip(self.venv, "bigpkg==1.0")
        self.marks = os.path.join(self.tmp, "probe-marks")
        # Each probe run notes when it ran: a failing in-place change's restore starts after the last.
        self.probe = ["--probe", "import time; open(%r, 'a').write('%%f\\n' %% time.time()); import bigpkg"
                      % self.marks]

    def pip(self, venv, spec):
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                        "--find-links", self.wheels, spec], check=True, env=self.env, capture_output=True)

    def read_during(self, venv, operation, window_from_last_mark=False):
        """(the reads wholly inside `operation()`, its result)."""
        work = tempfile.mkdtemp(prefix="reader-", dir=self.tmp)
        stop, out = os.path.join(work, "stop"), os.path.join(work, "reads")
        site = [os.path.join(venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(venv, "lib"))][0]
        reader = subprocess.Popen([sys.executable, READER, site, str(self.MODULES), stop, out])
        try:
            while not os.path.exists(out) or os.path.getsize(out) == 0:
                time.sleep(0.05)
            if os.path.exists(self.marks):
                os.unlink(self.marks)
            start = time.time()
            result = operation()
            end = time.time()
        finally:
            open(stop, "w").close()
            reader.wait(timeout=60)
        if window_from_last_mark:
            with open(self.marks) as marks:
                start = max(float(line) for line in marks)
        with open(out) as lines:
            return Reads(list(lines), start, end), result

    def run_venvtx(self, *args, code=0, env=None):
        proc = self.venvtx(*args, env=env, timeout=600)
        self.assertEqual(proc.returncode, code, "%s: %s%s (temp dir %s)" % (args, proc.stdout, proc.stderr, self.tmp))
        return proc

    def assertWhole(self, reads, what):
        self.assertGreaterEqual(reads.count, READS_AT_LEAST, "%s: too few reads to judge: %r" % (what, reads))
        self.assertEqual((reads.mixed, reads.failed), (0, 0), "%s: %r (temp dir %s)" % (what, reads, self.tmp))

class ReaderDuringChanges(BigPkgCase):
    MODULES = 3000

    def test_a_reader_sees_one_version_or_the_other_never_half(self):
        plain = os.path.join(self.tmp, "plain")
        subprocess.run(["cp", "-a", self.venv, plain], check=True)
        reads, _ = self.read_during(plain, lambda: self.pip(plain, "bigpkg==2.0"))
        self.assertGreater(reads.mixed + reads.failed, 0, "the reader cannot tell: pip gave %r" % reads)

        before = tree_hash(self.venv)
        reads, proc = self.read_during(self.venv, lambda: self.run_venvtx(
            "--json", "install", *self.probe, "bigpkg==2.0", *self.wheel_args))
        self.assertWhole(reads, "previewed install upgrade")
        self.assertTrue(json.loads(proc.stdout)["transaction"]["preview"]["used"])

        reads, _ = self.read_during(self.venv, lambda: self.run_venvtx("rollback"))
        self.assertWhole(reads, "rollback")
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))

        reads, _ = self.read_during(self.venv, lambda: self.run_venvtx(
            "install", "--preview", "never", *self.probe, "bigpkg==3.0", *self.wheel_args, code=3),
            window_from_last_mark=True)
        self.assertWhole(reads, "failing in-place upgrade's restore")
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))

        self.run_venvtx("install", "bigpkg==2.0", *self.wheel_args)
        reads, proc = self.read_during(self.venv, lambda: self.run_venvtx("--json", "rollback", *self.probe))
        self.assertWhole(reads, "rollback --probe")
        self.assertTrue(json.loads(proc.stdout)["transaction"]["preview"]["used"], proc.stdout)
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))
        self.assertEqual(switch_leftovers(self.venv), [])


class Switching(BigPkgCase):
    def test_a_file_written_into_a_package_while_it_switches_is_kept_and_named(self):
        """Someone writes into the live package after its shadow was cloned: the switch takes
        that file out with the old version, which keeps it (and says where) instead of clearing
        it away."""
        site = [os.path.join(self.venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(self.venv, "lib"))][0]
        notes = os.path.join(site, "bigpkg", "user-notes.txt")
        hook = "place:[ -e '%s' ] || echo mine > '%s'" % (notes, notes)
        proc = self.run_venvtx("install", "bigpkg==2.0", *self.wheel_args, env=dict(self.env, VENVTX_HOOK=hook))
        kept = switch_leftovers(self.venv)
        self.assertEqual(len(kept), 1, kept)
        with open(os.path.join(kept[0], "user-notes.txt")) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertIn("kept %s/user-notes.txt" % os.path.relpath(kept[0], self.venv), proc.stderr)

    def test_without_rename_exchange_it_goes_path_by_path_and_says_so(self):
        before = tree_hash(self.venv)
        env = dict(self.env, VENVTX_NO_EXCHANGE="1")
        proc = self.run_venvtx("-v", "--json", "install", "bigpkg==2.0", *self.wheel_args, env=env)
        tx = json.loads(proc.stdout)["transaction"]
        self.assertEqual(tx["details"]["switching"], {"per_path": "the filesystem refuses RENAME_EXCHANGE"})
        self.assertIn("path by path: the filesystem refuses RENAME_EXCHANGE", proc.stderr)
        self.run_venvtx("rollback", env=env)
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))
        self.assertEqual(switch_leftovers(self.venv), [])

    def test_a_uv_shaped_venv_keeps_every_second_name(self):
        """Every file of the package also has a name in a cache outside the venv, as uv lays
        it out: the upgrade and its rollback switch the package, and the cache's names keep
        their bytes."""
        cache = os.path.join(self.tmp, "uv-cache")
        site = [os.path.join(self.venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(self.venv, "lib"))][0]
        package = os.path.join(site, "bigpkg")
        os.makedirs(cache)
        for name in os.listdir(package):
            if name.endswith(".py"):
                os.link(os.path.join(package, name), os.path.join(cache, name))
        for info in [n for n in os.listdir(site) if n.startswith("bigpkg-")]:
            with open(os.path.join(site, info, "INSTALLER"), "w") as f:
                f.write("uv\n")
        cached = tree_hash(cache)
        before = tree_hash(self.venv)
        self.run_venvtx("remove", "bigpkg")
        self.run_venvtx("rollback")
        self.assertEqual(os.stat(os.path.join(package, "m00000.py")).st_ino,
                         os.stat(os.path.join(cache, "m00000.py")).st_ino, "the rollback put a copy back")
        self.run_venvtx("install", "bigpkg==2.0", *self.wheel_args)
        self.assertEqual(cached, tree_hash(cache))
        self.run_venvtx("rollback")
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))
        self.assertEqual(cached, tree_hash(cache))
        self.assertEqual(switch_leftovers(self.venv), [])



class FallsBackInsteadOfWedging(BigPkgCase):
    """Issue 41, item 7: where a unit cannot be exchanged or cloned, the change goes path by path
    and says why; a clone keeps each directory as it was (owner, group, set-id and group-write
    bits, xattrs), never one made anew under the umask."""

    MODULES = 20

    def setUp(self):
        super().setUp()
        self.site = [os.path.join(self.venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(self.venv, "lib"))][0]
        self.package = os.path.join(self.site, "bigpkg")

    def mount(self, *args):
        if os.geteuid() != 0:
            self.skipTest("mounting needs root")
        target = args[-1]
        subprocess.run(["mount", *args], check=True, capture_output=True)
        self.addCleanup(subprocess.run, ["umount", "-l", target], capture_output=True)

    def remove_then_roll_back(self, why, user=None):
        before = tree_hash(self.venv)
        proc = self.as_user(user, "--json", "remove", "bigpkg", "--no-probe")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        switching = json.loads(proc.stdout)["transaction"]["details"].get("switching", {})
        self.assertIn(why, switching.get("per_path", ""), switching)
        self.assertEqual(switch_leftovers(self.venv), [])
        rollback = self.as_user(user, "rollback")
        self.assertEqual(rollback.returncode, 0, rollback.stdout + rollback.stderr)
        after = tree_hash(self.venv)
        self.assertEqual(before, after, tree_diff(before, after))
        self.assertEqual(switch_leftovers(self.venv), [])

    def as_user(self, user, *args):
        """venvtx run as `user` (a uid; None: as this process)."""
        if user is None:
            return self.venvtx(*args, timeout=600)
        return subprocess.run(["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", "--",
                               VENVTX, "--venv", self.venv, *args], capture_output=True, text=True, env=self.env,
                              timeout=600)

    def test_a_venv_baked_into_a_lower_layer_of_an_overlay(self):
        upper, work = os.path.join(self.tmp, "upper"), os.path.join(self.tmp, "work")
        os.mkdir(upper)
        os.mkdir(work)
        self.mount("-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s" % (self.venv, upper, work),
                   self.venv)
        self.remove_then_roll_back("overlayfs")

    def test_a_mount_inside_a_package(self):
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        with open(os.path.join(elsewhere, "weights.bin"), "wb") as f:
            f.write(b"not the venv's\n")
        os.mkdir(os.path.join(self.package, "data"))
        self.mount("--bind", elsewhere, os.path.join(self.package, "data"))
        self.remove_then_roll_back("cannot be cloned")
        self.assertEqual(os.listdir(os.path.join(self.package, "data")), ["weights.bin"])

    def test_another_users_file_in_a_package_under_protected_hardlinks(self):
        with open("/proc/sys/fs/protected_hardlinks") as f:
            if f.read().strip() != "1" or os.geteuid() != 0 or shutil.which("setpriv") is None:
                self.skipTest("needs root, setpriv and fs.protected_hardlinks=1")
        user = 65534
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.lchown(name, user, user)
        root_owned = os.path.join(self.package, "licence-server.dat")
        with open(root_owned, "w") as f:
            f.write("root's\n")
        os.chmod(root_owned, 0o600)
        os.chmod(self.tmp, 0o755)
        self.remove_then_roll_back("cannot be cloned", user=user)
        self.assertEqual(os.stat(root_owned).st_uid, 0)

    def test_a_cloned_directory_keeps_its_owner_mode_and_xattrs(self):
        userdata = os.path.join(self.package, "userdata")
        os.mkdir(userdata)
        with open(os.path.join(userdata, "notes.txt"), "w") as f:  # the user's: the package stays
            f.write("mine\n")
        os.chmod(userdata, 0o2775)
        if os.geteuid() == 0:
            os.chown(userdata, 1234, 1234)
        os.setxattr(userdata, "user.note", b"kept")
        want = os.stat(userdata)

        def check(when):
            st = os.stat(userdata)
            self.assertEqual((oct(st.st_mode), st.st_uid, st.st_gid), (oct(want.st_mode), want.st_uid, want.st_gid), when)
            self.assertEqual(os.getxattr(userdata, "user.note"), b"kept", when)

        self.run_venvtx("install", "bigpkg==2.0", *self.wheel_args)
        check("after the upgrade")
        self.run_venvtx("rollback")
        check("after its rollback")


class SwitchSweeps(test_crash.SweepCase):
    """kill -9, ENOSPC and EIO at the steps of switched changes (shadows cloned and built, the
    switch journaled, units exchanged, pre-images captured from the old versions, old versions
    cleared), then `recover`: the venv is exactly the before- or the after-state. A package with
    a script, a shared-data file, a module beside its directory and a directory that becomes a
    file (in the package and at the top), so that every kind of unit switches and a recovery
    puts a directory back where a file stands. Every eighth step past the tenth; the two faults
    take turns at it (VENVTX_FULL_SWEEPS=1: every step, each fault)."""

    SAMPLE_EVERY = 8

    def template(self):
        wheels = os.path.join(self.tmp, "small-wheels")
        os.makedirs(wheels)
        for version in ("1.0", "2.0"):
            files = {"smallpkg/__init__.py": "VERSION = %r\n" % version, "smallmod.py": "V = %r\n" % version,
                     "smallpkg-%s.data/scripts/smalltool" % version: "#!/bin/sh\necho %s\n" % version,
                     "smallpkg-%s.data/data/share/smallpkg/notes.txt" % version: version + "\n"}
            files.update({"smallpkg/m%d.py" % i: "V = %r\n" % version for i in range(4 if version == "1.0" else 5)})
            # A directory in 1.0 that 2.0 ships as a file, inside the package and at the top.
            if version == "1.0":
                files.update({"smallpkg/res/a.txt": "a\n", "smallpkg/res/b.txt": "b\n", "smallres/x.txt": "x\n"})
            else:
                files.update({"smallpkg/res": "a file now\n", "smallres": "a file now\n"})
            write_wheel(wheels, "smallpkg", version, "py3-none-any", files, top_level=["smallpkg", "smallmod"])
        self.env["PIP_CONFIG_FILE"] = os.devnull
        self.env["PIP_NO_CACHE_DIR"] = "1"
        subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                        "--find-links", wheels, "smallpkg==1.0"], check=True, env=self.env, capture_output=True)
        installed = self.venvtx("install", "smallpkg==2.0", "--", "--no-index", "--find-links", wheels, timeout=300)
        self.assertEqual(installed.returncode, 0, installed.stderr)
        template = os.path.join(self.tmp, "template")
        os.rename(self.venv, template)
        return template

    def test_kill_during_a_switched_rollback(self):
        self.sweep(self.template(), ["rollback"], 0, "committed", verify_after=True)

    def test_kill_during_a_switched_apply_and_its_switched_restore(self):
        args = ["remove", "smallpkg", "--preview", "never", "--no-baseline", "--probe", "raise SystemExit(1)"]
        self.sweep(self.template(), args, 3, "rolled_back")

    def test_a_failed_rollback_of_a_removal_keeps_every_stored_file(self):
        """The rollback of a removal renames the removal's own files back in; an I/O error after
        that restores, and the restore must send them back to the store (they are the only
        copy): after each fault, a plain rollback still brings the package back exactly."""
        template = self.template()
        self.fresh(template)
        self.assertEqual(self.venvtx("remove", "smallpkg").returncode, 0)
        removed = os.path.join(self.tmp, "removed")
        shutil.rmtree(removed, ignore_errors=True)
        os.rename(self.venv, removed)
        self.fresh(removed)
        before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        after = tree_hash(self.venv)
        steps = test_crash.InjectedIoErrors.count_steps(self, removed, ["rollback"])
        tried = 0
        for step in (s for s in range(1, steps + 1) if test_crash.sampled(s, self.SAMPLE_EVERY)):
            self.fresh(removed)
            proc = self.venvtx("rollback", env=dict(self.env, VENVTX_FAULT="%d:EIO" % step))  # once: the restore runs
            if self.final_state() in ("started", "applied", "interrupted"):
                self.assertEqual(self.venvtx("recover").returncode, 0)
            tree = tree_hash(self.venv)
            where = "EIO at step %d of %d: %s" % (step, steps, proc.stderr.strip()[-300:])
            self.assertIn(tree, (before, after), where)
            if tree == before:
                again = self.venvtx("rollback")
                self.assertEqual(again.returncode, 0, where + " / then: " + again.stderr)
                self.assertEqual(tree_hash(self.venv), after, where)
            tried += 1
        print("\n  rollback of a removal: EIO from %d points (of %d steps), every stored file kept" % (tried, steps))

    def test_enospc_and_eio_during_a_switched_rollback(self):
        test_crash.InjectedIoErrors.fault_sweep(self, self.template(), ["rollback"], ("ENOSPC", "EIO:persist"),
                                                every=2 * self.SAMPLE_EVERY, staggered=True)


if __name__ == "__main__":
    unittest.main()
