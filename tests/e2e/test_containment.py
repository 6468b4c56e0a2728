"""Containment (issue 10): never touch what isn't yours.

Every test builds a SENTINEL tree outside the venv (files, a subdirectory, symlinks), points a
symlink, a hard link or a swap at it (or attacks the store, the history or the probe), runs
venvtx, and checks with its own hashing (support.tree_hash: plain lstat + hashlib) that
  (a) the sentinel tree is byte-identical afterwards (invariant 3),
  (b) the venv is in the state the verdict claims: its before-state, or the verdict names every
      path that is not, and never says "restored" when it is not (invariants 1 and 7),
  (c) no byte that was in the venv is gone from both the venv and the store: every file content
      of the before-state is in the venv, or in a file under <store>/objects or <store>/staging
      (hashed here) (invariant 6),
and that exit codes are the contract's (docs/design.md, "The contract"). A venvtx that refuses an
attack passes as long as it refuses cleanly (the exit code the contract gives, one `venvtx:` line,
nothing changed); one that goes ahead must not follow the symlink, and its rollback must bring the
before-state back exactly, symlinks as symlinks.
"""
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import textwrap
import time
import unittest

from support import VENVTX, VenvTestCase, flat, story_template, tree_diff, tree_hash


T = 60  # seconds: the most any single venvtx call here may take

STRUCTURAL = {"bin", "lib", "lib64", "share", "include"}


def file_hashes(tree):
    return {entry[3] for entry in tree.values() if entry[0] == "file"}


def claims_restored(text):
    """Does a verdict claim the venv is back? "NOT restored", "unrestored", "could not be
    restored" are not claims."""
    if "as it was before" in text:
        return True
    lowered = text.lower()
    if re.search(r"\bnot\b[^.;\n]{0,24}restored|unrestored|n't[^.;\n]{0,24}restored", lowered):
        return False
    return "restored" in lowered


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def alive(pid):
    try:
        return proc_state(pid) not in ("Z", "X")
    except OSError:
        return False


def processes_with_arg(tag):
    """Live pids with `tag` as one of their arguments (read from /proc: no pgrep needed)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if tag.encode() in args and alive(int(entry)):
            found.append(int(entry))
    return found


def kill_tagged(tag):
    """Cleanup: SIGKILL, by pid, the processes this test started (they carry its unique tag)."""
    for pid in processes_with_arg(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def unique_tag():
    return "61.%06d" % random.randrange(10 ** 6)  # a `sleep` argument no other process has


class ContainmentCase(VenvTestCase):
    """A sentinel tree beside the venv and the three checks every test makes."""

    def setUp(self):
        super().setUp()
        self.rel_site = os.path.relpath(self.site, self.venv)
        self.sentinel = os.path.join(self.tmp, "sentinel")
        os.makedirs(os.path.join(self.sentinel, "sub", "deeper"))
        self.write(os.path.join(self.sentinel, "notes.txt"), "sentinel notes: not venvtx's\n")
        self.write(os.path.join(self.sentinel, "data.bin"), bytes(range(256)) * 17, mode=0o640)
        self.write(os.path.join(self.sentinel, "sub", "inner.txt"), "inner\n")
        self.write(os.path.join(self.sentinel, "sub", "deeper", "leaf.py"), "LEAF = 1\n")
        os.symlink("notes.txt", os.path.join(self.sentinel, "link-to-notes"))
        os.symlink(os.path.join(self.sentinel, "sub"), os.path.join(self.sentinel, "abs-link-to-sub"))
        self.snapshot()

    # --- building attacks -------------------------------------------------------------------

    @staticmethod
    def write(path, content, mode=None):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        if mode is not None:
            os.chmod(path, mode)

    @staticmethod
    def read(path):
        with open(path, "rb") as f:
            return f.read()

    def in_site(self, *parts):
        return os.path.join(self.site, *parts)

    def rel(self, *parts):
        """A venv-relative path as tree_hash names it."""
        return os.path.normpath(os.path.join(self.rel_site, *parts))

    def snapshot(self):
        """The before-state of both trees; call again after setting up an attack."""
        self.sentinel_before = tree_hash(self.sentinel)
        self.before = tree_hash(self.venv)
        return self.before

    def snapshot_sentinel_only(self):
        self.sentinel_before = tree_hash(self.sentinel)

    def sglang_paths(self):
        return [self.rel("sglang"), self.rel("sglang-0.5.5.dist-info"), "bin/sglang"]

    def log(self):
        proc, log = self.venvtx_json("log", timeout=T)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return log

    # --- the three checks -------------------------------------------------------------------

    def assertSentinelIntact(self, expected=None, proc=None):
        """(a)"""
        expected = self.sentinel_before if expected is None else expected
        after = tree_hash(self.sentinel)
        if after != expected:
            self.fail("the sentinel OUTSIDE the venv changed (temp dir %s):\n%s%s"
                      % (self.tmp, tree_diff(expected, after), self.verdict(proc)))

    def said(self, proc):
        """What venvtx printed, with the temp dir's path masked: its name holds the test's name,
        which must not satisfy a check for a word in the verdict."""
        return (proc.stdout + proc.stderr).replace(self.tmp, "<tmp>")

    @staticmethod
    def verdict(proc):
        if proc is None:
            return ""
        return "\nvenvtx exited %d: %s" % (proc.returncode, (proc.stdout + proc.stderr)[-2000:])

    def assertTree(self, expected, proc=None):
        """tree_hash(venv) == expected, failing with a short diff and venvtx's verdict."""
        actual = tree_hash(self.venv)
        if actual != expected:
            self.fail("the venv is not as expected (temp dir %s):\n%s%s"
                      % (self.tmp, tree_diff(expected, actual), self.verdict(proc)))

    def stored_hashes(self):
        """sha256 of every regular file under <store>/objects and <store>/staging, hashed here. A
        store directory that is a symlink is not the store: its target is outside."""
        hashes = set()
        for sub in ("objects", "staging"):
            top = os.path.join(self.venv, ".venvtx", sub)
            if os.path.islink(top) or not os.path.isdir(top):
                continue
            for dirpath, _, files in os.walk(top):
                for name in files:
                    path = os.path.join(dirpath, name)
                    if stat.S_ISREG(os.lstat(path).st_mode):
                        hashes.add(hashlib.sha256(self.read(path)).hexdigest())
        return hashes

    def assertNoByteLost(self, before=None, also=()):
        """(c): every file content of the before-state is in the venv or the store now (or in
        `also`: contents the test itself moved elsewhere)."""
        before = self.before if before is None else before
        present = file_hashes(tree_hash(self.venv)) | self.stored_hashes() | set(also)
        lost = sorted(path for path, entry in before.items() if entry[0] == "file" and entry[3] not in present)
        self.assertEqual(lost, [], "bytes gone from both the venv and the store (temp dir %s)" % self.tmp)

    def assertVerdictAccountsFor(self, expected, proc, doc=None):
        """(b): the venv equals `expected`, or the verdict does not claim it does and names every
        path that differs (that path or a directory above it; under --json: `unrestored`)."""
        actual = tree_hash(self.venv)
        if actual == expected:
            return
        text = self.said(proc)
        differing = [p for p in sorted(set(expected) | set(actual)) if expected.get(p) != actual.get(p)]
        self.assertFalse(claims_restored(text) or (doc is not None and doc.get("restored") is True),
                         "the verdict claims restored but the venv differs (temp dir %s):\n%s%s"
                         % (self.tmp, tree_diff(expected, actual), self.verdict(proc)))
        named = set(doc.get("unrestored") or []) if doc is not None else set()

        def is_named(path):
            while path and path not in STRUCTURAL and path != self.rel_site \
                    and path != os.path.dirname(self.rel_site):
                if path in named or re.search(re.escape(path) + r"(?![\w.-])", text):
                    return True
                path = os.path.dirname(path)
            return False

        unnamed = [p for p in differing if not is_named(p)]
        self.assertEqual(unnamed, [], "paths not as before and not named by the verdict (temp dir %s):\n%s%s"
                         % (self.tmp, tree_diff(expected, actual), self.verdict(proc)))

    # --- outcomes ---------------------------------------------------------------------------

    def assertRefusedUnchanged(self, proc, codes, expected=None, names=None):
        """A refusal: one of `codes`, a one-line `venvtx: ` error (naming `names`), nothing changed."""
        self.assertIn(proc.returncode, codes, self.verdict(proc))
        message = proc.stderr.strip()
        self.assertTrue(message.startswith("venvtx: ") and "\n" not in message, self.verdict(proc))
        if names:
            self.assertIn(names, message.replace(self.tmp, "<tmp>"))
        self.assertTree(self.before if expected is None else expected, proc)

    def assertOnlyUnder(self, before, after, prefixes, proc=None):
        """A remove that went ahead: everything that changed lies under the planned prefixes, and
        nothing was added."""
        changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
        stray = sorted(p for p in changed if not any(p == pre or p.startswith(pre + "/") for pre in prefixes))
        added = sorted(p for p in after if p not in before)
        self.assertEqual((stray, added), ([], []), "changed outside the planned paths, or added (temp dir %s)%s"
                         % (self.tmp, self.verdict(proc)))

    def refused_or_contained(self, proc, planned, names):
        """After a remove under attack: a clean refusal (exit 2, one line naming the path), or a
        remove that only took planned paths, stored every byte, and whose rollback brings back
        the before-state exactly (symlinks as symlinks). Returns True if it went ahead."""
        self.assertSentinelIntact(proc=proc)
        if proc.returncode != 0:
            self.assertRefusedUnchanged(proc, (2,), names=names)
            return False
        self.assertOnlyUnder(self.before, tree_hash(self.venv), planned, proc)
        self.assertNoByteLost()
        rollback = self.venvtx("rollback", timeout=T)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertSentinelIntact(proc=rollback)
        self.assertTree(self.before, rollback)
        return True


class SymlinkedPlannedPaths(ContainmentCase):
    """Symlinks, placed before the command, on the paths a remove plans: bytecode, a package
    directory, a module, a console script in bin/, a .data file's directory."""

    def link_pycache(self, record_lists_bytecode):
        pycache = self.in_site("sglang", "__pycache__")
        target = os.path.join(self.sentinel, "pycache")
        os.mkdir(target)
        for name in os.listdir(pycache):  # the names a RECORD and a bytecode sweep look for
            self.write(os.path.join(target, name), b"sentinel bytecode " + name.encode())
        self.write(os.path.join(target, "other.cpython-311.pyc"), b"sentinel extra bytecode")
        self.write(os.path.join(target, "nested", "x.cpython-311.pyc"), b"nested")
        shutil.rmtree(pycache)
        os.symlink(target, pycache)
        if not record_lists_bytecode:  # as uv writes it: bytecode is Python's, written later
            record = self.in_site("sglang-0.5.5.dist-info", "RECORD")
            lines = self.read(record).decode().splitlines(True)
            self.write(record, "".join(line for line in lines if "__pycache__" not in line))
        self.snapshot()
        proc = self.venvtx("remove", "sglang", timeout=T)
        if self.refused_or_contained(proc, self.sglang_paths(), names="__pycache__"):
            self.assertEqual(os.readlink(pycache), target)

    def test_symlinked_pycache_listed_in_record(self):
        self.link_pycache(record_lists_bytecode=True)

    def test_symlinked_pycache_found_by_the_bytecode_sweep(self):
        self.link_pycache(record_lists_bytecode=False)

    def test_package_dir_replaced_by_symlink_to_outside_copy(self):
        package = self.in_site("sglang")
        copy = os.path.join(self.sentinel, "sglang-checkout")
        shutil.copytree(package, copy, symlinks=True)
        self.write(os.path.join(copy, "local_change.py"), "# the user's own work\n")
        shutil.rmtree(package)
        os.symlink(copy, package)
        self.snapshot()
        proc = self.venvtx("remove", "sglang", timeout=T)
        self.refused_or_contained(proc, self.sglang_paths(), names="sglang")

    def test_module_replaced_by_symlink_to_outside_file(self):
        init = self.in_site("sglang", "__init__.py")
        os.unlink(init)
        os.symlink(os.path.join(self.sentinel, "notes.txt"), init)
        self.snapshot()
        proc = self.venvtx("remove", "sglang", timeout=T)
        self.refused_or_contained(proc, self.sglang_paths(), names="sglang/__init__.py")

    def test_console_script_symlinked_to_outside_file(self):
        script = os.path.join(self.venv, "bin", "sglang")
        tool = os.path.join(self.sentinel, "my-sglang-wrapper")
        self.write(tool, "#!/bin/sh\necho the user's wrapper\n", mode=0o755)
        os.unlink(script)
        os.symlink(tool, script)
        self.snapshot()
        proc = self.venvtx("remove", "sglang", timeout=T)
        if self.refused_or_contained(proc, self.sglang_paths(), names="bin/sglang"):
            self.assertEqual(os.readlink(script), tool)

    def test_data_scheme_parent_dir_symlinked_outside(self):
        share = os.path.join(self.venv, "share", "flashinfer")
        outside = os.path.join(self.sentinel, "flashinfer-share")
        self.write(os.path.join(outside, "config.json"), '{"the user": "tuned this"}\n')
        self.write(os.path.join(outside, "kernels.cache"), b"\x00cache\x01" * 100)
        shutil.rmtree(share)
        os.symlink(outside, share)
        self.snapshot()
        proc = self.venvtx("remove", "flashinfer-python", timeout=T)
        planned = [self.rel("flashinfer"), self.rel("flashinfer_python-0.5.2.dist-info"), "share"]
        if self.refused_or_contained(proc, planned, names="share/flashinfer"):
            self.assertEqual(os.readlink(share), outside)


class RollbackThroughSymlinks(ContainmentCase):
    """After a remove, the user puts a symlink where a removed directory was (a dev checkout): a
    rollback must refuse (drift, exit 6), never write through it."""

    def assertRollbackRefused(self, link_rel):
        log_before = self.log()
        proc = self.venvtx("rollback", timeout=T)
        self.assertSentinelIntact(proc=proc)
        self.assertTree(self.before, proc)
        self.assertEqual(proc.returncode, 6, "drift is exit 6" + self.verdict(proc))
        self.assertIn(link_rel, self.said(proc))
        self.assertEqual([(t["id"], t["state"]) for t in self.log()],
                         [(t["id"], t["state"]) for t in log_before])

    def test_rollback_after_package_dir_became_a_dev_checkout_link(self):
        self.assertEqual(self.venvtx("remove", "sglang", timeout=T).returncode, 0)
        checkout = os.path.join(self.sentinel, "sglang-dev")
        shutil.copytree(os.path.join(story_template(), "venv", self.rel_site, "sglang"), checkout)
        self.write(os.path.join(checkout, "__init__.py"), '__version__ = "0.6.0.dev0"  # the user\'s checkout\n')
        os.symlink(checkout, self.in_site("sglang"))
        self.snapshot()
        self.assertRollbackRefused(self.rel("sglang"))

    def test_rollback_after_removed_data_dir_became_a_link(self):
        self.assertEqual(self.venvtx("remove", "flashinfer-python", timeout=T).returncode, 0)
        outside = os.path.join(self.sentinel, "shared-data")
        self.write(os.path.join(outside, "flashinfer", "config.json"), '{"someone": "else"}\n')
        share = os.path.join(self.venv, "share")
        link = share if not os.path.lexists(share) else os.path.join(share, "flashinfer")
        self.assertFalse(os.path.lexists(link))
        os.symlink(outside if link == share else os.path.join(outside, "flashinfer"), link)
        self.snapshot()
        self.assertRollbackRefused(os.path.relpath(link, self.venv))


class SwapBetweenPlanAndCapture(ContainmentCase):
    """The baseline probe runs after planning and before capture: it swaps site-packages/sglang
    for a symlink to the directory it moved into the sentinel area (once: a marker file)."""

    def swap_probe(self, after_probe_fails):
        self.marker = os.path.join(self.tmp, "swap-marker")
        self.moved = os.path.join(self.sentinel, "moved-sglang")
        self.write(self.marker, "swap once\n")
        return ("import os\n"
                "if os.path.exists(%r):\n"
                "    os.rename(%r, %r)\n"
                "    os.symlink(%r, %r)\n"
                "    os.unlink(%r)\n"
                "elif %r:\n"
                "    raise SystemExit('the after-probe fails on purpose')\n"
                % (self.marker, self.in_site("sglang"), self.moved, self.moved, self.in_site("sglang"),
                   self.marker, after_probe_fails))

    def expected_after_swap(self):
        """(venv, sentinel, moved contents) right after the swap, derived from the before-state."""
        prefix = self.rel("sglang")
        inside = [p for p in self.before if p == prefix or p.startswith(prefix + "/")]
        venv = {p: e for p, e in self.before.items() if p not in inside}
        venv[prefix] = ("link", 0o777, 0, self.moved)
        sentinel = dict(self.sentinel_before)
        for p in inside:
            sentinel["moved-sglang" + p[len(prefix):]] = self.before[p]
        return venv, sentinel, {self.before[p][3] for p in inside if self.before[p][0] == "file"}

    def check(self, after_probe_fails):
        probe = self.swap_probe(after_probe_fails)
        self.snapshot()
        proc = self.venvtx("remove", "sglang", "--preview", "never", "--probe", probe, timeout=T)
        self.assertFalse(os.path.exists(self.marker), "the baseline probe did not swap" + self.verdict(proc))
        venv_swapped, sentinel_swapped, moved = self.expected_after_swap()
        self.assertSentinelIntact(sentinel_swapped, proc)
        self.assertNoByteLost(also=moved)
        if proc.returncode == 0:
            self.assertFalse(after_probe_fails, self.verdict(proc))
            self.assertOnlyUnder(venv_swapped, tree_hash(self.venv), self.sglang_paths(), proc)
            rollback = self.venvtx("rollback", timeout=T)
            self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
            self.assertSentinelIntact(sentinel_swapped, rollback)
            self.assertTree(venv_swapped, rollback)
        else:
            # refused (1 or 2: unchanged) or, with the failing probe, 3: restored or NOT restored + paths
            self.assertIn(proc.returncode, (1, 2, 3) if after_probe_fails else (1, 2), self.verdict(proc))
            self.assertVerdictAccountsFor(venv_swapped, proc)
            if "recover" in self.said(proc):  # exit 1 may leave it marked for `recover`
                recover = self.venvtx("recover", timeout=T)
                self.assertEqual(recover.returncode, 0, self.verdict(recover))
                self.assertSentinelIntact(sentinel_swapped, recover)
                self.assertNoByteLost(also=moved)
                self.assertVerdictAccountsFor(venv_swapped, recover)

    def test_swap_then_passing_probe(self):
        self.check(after_probe_fails=False)

    def test_swap_then_failing_probe_restores_without_following(self):
        self.check(after_probe_fails=True)


class SwapAfterACrash(ContainmentCase):
    """venvtx killed in the middle of a removal (VENVTX_FAILPOINT), then, before `recover`, the
    half-captured package directory is moved aside and a symlink to a copy in the sentinel put
    in its place: recovery must not write through it, and must say what it could not restore."""

    def test_recover_after_a_swap_does_not_follow_the_link(self):
        args = ["remove", "sglang", "--no-baseline"]
        points = [5, 9, 13]  # inside the capture (a new store's first step allocates its reserve)
        for point in points:
            with self.subTest(failpoint=point):
                shutil.rmtree(self.venv)
                subprocess.run(["cp", "-a", os.path.join(story_template(), "venv"), self.venv], check=True)
                shutil.rmtree(os.path.join(self.sentinel, "sglang-copy"), ignore_errors=True)
                self.snapshot()
                killed = self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT=str(point)), timeout=T)
                self.assertEqual(killed.returncode, -9, self.verdict(killed))
                package = self.in_site("sglang")
                if not os.path.isdir(package):
                    continue  # the kill came after the directory went: nothing to swap
                shutil.copytree(package, os.path.join(self.sentinel, "sglang-copy"), symlinks=True)
                self.snapshot_sentinel_only()
                os.rename(package, self.in_site("sglang.moved-aside"))
                os.symlink(os.path.join(self.sentinel, "sglang-copy"), package)
                recovered = self.venvtx("--json", "recover", timeout=T)
                self.assertSentinelIntact(proc=recovered)
                self.assertIn(recovered.returncode, (0, 1, 5), self.verdict(recovered))
                self.assertNoByteLost()
                after = tree_hash(self.venv)
                changed = [p for p in set(self.before) | set(after) if self.before.get(p) != after.get(p)]
                swapped = (self.rel("sglang"), self.rel("sglang.moved-aside"))
                self.assertEqual([p for p in changed if not p.startswith(swapped)], [],
                                 "recover changed paths the swap did not touch" + self.verdict(recovered))
                self.assertTrue(os.path.islink(package), "recover replaced the link it found")
                if recovered.returncode == 0:
                    doc = flat(json.loads(recovered.stdout))["recovered"][0]
                    self.assertEqual(doc["state"], "rolled_back")
                    self.assertFalse(doc["restored"], recovered.stdout)
                    self.assertTrue(any(p.startswith(self.rel("sglang")) for p in doc["unrestored"]),
                                    doc["unrestored"])


class ChangedBeforeTheRecheck(ContainmentCase):
    """Another process changes a path just after venvtx put it back and before its verdict
    (VENVTX_HOOK=recheck: the fs seam runs a command at that moment). The verdict is the check's,
    not the restore's word: it names the path, and the index does not say restored."""

    def tamper(self, rel_path):
        """The hook that appends to `rel_path` (venv-relative) at a re-check that finds it there
        (a removal's own check, before the restore's, finds it gone)."""
        path = os.path.join(self.venv, rel_path)
        return dict(self.env, VENVTX_HOOK="recheck:if [ -e '%s' ]; then echo tampered >> '%s'; fi" % (path, path))

    def test_a_restore_after_a_failed_probe(self):
        target = self.rel("sglang", "__init__.py")
        proc, tx = self.venvtx_json("remove", "sglang", "--preview", "never", "--no-baseline", "--probe",
                                    "raise SystemExit(1)", env=self.tamper(target), timeout=T)
        self.assertEqual(proc.returncode, 3, self.verdict(proc))
        self.assertFalse(tx["restored"], tx)
        self.assertIn(target, tx["unrestored"])
        self.assertSentinelIntact(proc=proc)

    def test_a_rollback(self):
        self.assertEqual(self.venvtx("remove", "sglang", "--no-baseline", timeout=T).returncode, 0)
        target = self.rel("sglang", "__init__.py")
        proc = self.venvtx("rollback", env=self.tamper(target), timeout=T)
        self.assertNotEqual(proc.returncode, 0, self.verdict(proc))
        self.assertIn(target, proc.stdout + proc.stderr)
        self.assertSentinelIntact(proc=proc)

    def swap(self, point, rel_dir):
        """The hook that puts a symlink to the sentinel where directory `rel_dir` is, at `point`."""
        path = os.path.join(self.venv, rel_dir)
        return dict(self.env, VENVTX_HOOK="%s:if [ -d '%s' ] && [ ! -L '%s' ]; then mv '%s' '%s.aside' && ln -s '%s' '%s'; fi"
                    % (point, path, path, path, path, self.sentinel, path))

    def test_a_symlink_put_where_a_rollback_is_about_to_place_a_package(self):
        # A removal's capture moves its files and directories at once; a rollback captures what
        # is there, then places the package: the link appears in between.
        self.assertEqual(self.venvtx("remove", "sglang", "--no-baseline", timeout=T).returncode, 0)
        package = os.path.join(self.venv, self.rel("sglang"))
        hook = "place:[ -e '%s' ] || ln -s '%s' '%s'" % (package, self.sentinel, package)
        proc = self.venvtx("rollback", env=dict(self.env, VENVTX_HOOK=hook), timeout=T)
        self.assertNotEqual(proc.returncode, 0, self.verdict(proc))
        self.assertIn(self.rel("sglang"), proc.stdout + proc.stderr)
        self.assertTrue(os.path.islink(package), "the rollback replaced the link it found")
        self.assertSentinelIntact(proc=proc)

    def test_a_symlink_swapped_in_at_the_recheck_of_a_restore(self):
        package = self.rel("sglang", "srt")
        proc, tx = self.venvtx_json("remove", "sglang", "--preview", "never", "--no-baseline", "--probe",
                                    "raise SystemExit(1)", env=self.swap("recheck", package), timeout=T)
        self.assertEqual(proc.returncode, 3, self.verdict(proc))
        self.assertFalse(tx["restored"], tx)
        self.assertTrue(any(path.startswith(package) for path in tx["unrestored"]), tx)
        self.assertSentinelIntact(proc=proc)

    def test_a_recovery(self):
        killed = self.venvtx("remove", "sglang", "--no-baseline", env=dict(self.env, VENVTX_FAILPOINT="9"), timeout=T)
        self.assertEqual(killed.returncode, -9, self.verdict(killed))
        target = self.rel("sglang", "__init__.py")
        proc = self.venvtx("--json", "recover", env=self.tamper(target), timeout=T)
        doc = flat(json.loads(proc.stdout))["recovered"][0]
        self.assertFalse(doc["restored"], proc.stdout)
        self.assertIn(target, doc["unrestored"])
        self.assertSentinelIntact(proc=proc)


class TheStoreItself(ContainmentCase):
    """<venv>/.venvtx/objects or staging replaced by a symlink to the sentinel area, after an
    earlier transaction created the store."""

    def redirect(self, sub):
        self.assertEqual(self.venvtx("remove", "flash-attn", timeout=T).returncode, 0)
        path = os.path.join(self.venv, ".venvtx", sub)
        outside = os.path.join(self.sentinel, "store-" + sub)
        if os.path.isdir(path):
            shutil.copytree(path, outside, symlinks=True)
            shutil.rmtree(path)
        else:
            os.mkdir(outside)
        self.write(os.path.join(outside, "README.user"), "not a store: the user's directory\n")
        os.symlink(outside, path)
        self.snapshot()

    def refused_or_stored(self, proc):
        """Refused (unchanged, one line), or done without writing outside: every byte stored in
        the real store, and a rollback brings the before-state back."""
        self.assertSentinelIntact(proc=proc)
        if proc.returncode != 0:
            self.assertRefusedUnchanged(proc, (1, 2, 5))
            return
        self.assertNoByteLost()
        rollback = self.venvtx("rollback", timeout=T)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertSentinelIntact(proc=rollback)
        self.assertTree(self.before, rollback)

    def test_objects_symlinked_outside_then_remove(self):
        self.redirect("objects")
        self.refused_or_stored(self.venvtx("remove", "sglang", timeout=T))

    def test_staging_symlinked_outside_then_link_capture_run(self):
        self.redirect("staging")
        self.refused_or_stored(self.venvtx("run", "--capture", "link", "--", "sh", "-c",
                                           'rm "$VIRTUAL_ENV/bin/torchrun"', timeout=T))

    def test_staging_symlinked_outside_then_touch_capture_run(self):
        self.redirect("staging")
        target = self.in_site("flashinfer", "__init__.py")
        self.refused_or_stored(self.venvtx("run", "--capture", "touch", "--", "sh", "-c",
                                           "rm \"$VIRTUAL_ENV/bin/torchrun\"; echo '# x' >> '%s'" % target,
                                           timeout=T))


class HardLinksFromOutside(ContainmentCase):
    """A second name outside the venv for a venv file: the inode is the sentinel's too."""

    def link_out(self):
        self.victim = self.in_site("sglang", "launch_server.py")
        self.outside = os.path.join(self.sentinel, "hardlinked-launch_server.py")
        os.link(self.victim, self.outside)
        self.victim_bytes = self.read(self.victim)
        self.snapshot()

    def test_remove_and_rollback_keep_the_outside_name_intact(self):
        self.link_out()
        proc = self.venvtx("remove", "sglang", timeout=T)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        self.assertEqual(self.read(self.outside), self.victim_bytes)
        self.assertSentinelIntact(proc=proc)  # bytes and mode of the outside name
        self.assertNoByteLost()
        rollback = self.venvtx("rollback", timeout=T)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertSentinelIntact(proc=rollback)
        self.assertTree(self.before, rollback)

    def test_outside_write_after_remove_never_reaches_the_store(self):
        # The outside name is the user's: they may write it after the remove. The bytes venvtx
        # removed must still be in the store (a pre-image nobody else can alter), and the rollback
        # restores them exactly.
        self.link_out()
        self.assertEqual(self.venvtx("remove", "sglang", timeout=T).returncode, 0)
        with open(self.outside, "r+b") as f:  # in place, as an editor that keeps the inode would
            f.write(b"# the user's edit\n")
        self.snapshot_sentinel_only()
        self.assertNoByteLost()
        rollback = self.venvtx("rollback", timeout=T)
        self.assertSentinelIntact(proc=rollback)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertTree(self.before, rollback)


class CrashedCommands(ContainmentCase):
    """venvtx SIGKILLed while it watches a command; then a user file appears; then `recover`."""

    def kill_mid_command(self, capture, through_shell=False):
        self.tag = unique_tag()
        self.addCleanup(kill_tagged, self.tag)
        pidfile = os.path.join(self.tmp, "command.pid")
        self.added = self.in_site("cmd_added.txt")
        code = ("import os, sys, time\n"
                "os.unlink(%r)\n"                                       # a removal to undo
                "open(%r, 'a').write('# edited by the command\\n')\n"  # an in-place edit
                "open(%r, 'w').write('from the command\\n')\n"         # an added file
                "open(%r + '.tmp', 'w').write(str(os.getpid())); os.rename(%r + '.tmp', %r)\n"
                "time.sleep(float(sys.argv[1]))\n"
                % (os.path.join(self.venv, "bin", "torchrun"), self.in_site("flashinfer", "__init__.py"),
                   self.added, pidfile, pidfile, pidfile))
        extra = ["--copy"] if capture == "link" else []
        log = os.path.join(self.tmp, "venvtx.out")
        with open(log, "w") as out:
            # Through a shell, the command's writer is its grandchild: PDEATHSIG ends the shell only.
            shell = ["sh", "-c", '"$0" "$@" & wait'] if through_shell else []
            venvtx = subprocess.Popen([VENVTX, "--venv", self.venv, "run", "--capture", capture, *extra, "--",
                                       *shell, os.path.join(self.venv, "bin", "python"), "-c", code, self.tag],
                                      stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.tmp)
        self.addCleanup(lambda: venvtx.poll() is None and venvtx.kill())
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile) and time.monotonic() < deadline and venvtx.poll() is None:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(pidfile), "the command never started: " + self.read(log).decode())
        command_pid = int(self.read(pidfile))
        venvtx.send_signal(signal.SIGKILL)
        venvtx.wait(timeout=10)
        deadline = time.monotonic() + 3
        while alive(command_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return command_pid

    def check_command_dies(self, capture, through_shell=False):
        command_pid = self.kill_mid_command(capture, through_shell)
        self.assertFalse(alive(command_pid), "the command watched under %s capture outlived the SIGKILLed "
                         "venvtx by 3 s (pid %d)" % (capture, command_pid))

    def check_recover_keeps_user_file(self, capture):
        command_pid = self.kill_mid_command(capture)
        if alive(command_pid):  # checked by check_command_dies; here it must not interfere
            os.kill(command_pid, signal.SIGKILL)
        notes = self.in_site("user_notes.txt")
        self.write(notes, "the user's own notes, written after the crash\n")
        notes_hash = hashlib.sha256(self.read(notes)).hexdigest()
        proc = self.venvtx("recover", timeout=T)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        self.assertSentinelIntact(proc=proc)
        if os.path.exists(notes):
            self.assertEqual(hashlib.sha256(self.read(notes)).hexdigest(), notes_hash)
        else:
            self.assertIn(notes_hash, self.stored_hashes(), "recover deleted a file it did not create" +
                          self.verdict(proc))
            self.assertIn("user_notes.txt", self.said(proc), "recover set a user file aside silently")
        self.assertNoByteLost()
        # (b): the before-state, but for the user's file (theirs, not the transaction's); the
        # command's own new file may be left in place if the verdict names it.
        expected = dict(self.before)
        if os.path.exists(notes):
            expected[self.rel("user_notes.txt")] = tree_hash(self.venv)[self.rel("user_notes.txt")]
        self.assertVerdictAccountsFor(expected, proc)

    def test_link_capture_killed_venvtx_kills_its_command(self):
        self.check_command_dies("link")

    def test_touch_capture_killed_venvtx_kills_its_command(self):
        self.check_command_dies("touch")

    def test_link_capture_killed_venvtx_kills_what_its_command_started(self):
        self.check_command_dies("link", through_shell=True)

    def test_touch_capture_killed_venvtx_kills_what_its_command_started(self):
        self.check_command_dies("touch", through_shell=True)

    def test_link_capture_recover_keeps_a_user_file_added_after_the_crash(self):
        self.check_recover_keeps_user_file("link")

    def test_touch_capture_recover_keeps_a_user_file_added_after_the_crash(self):
        self.check_recover_keeps_user_file("touch")


class CommandsAgainstTheHistory(ContainmentCase):
    """A watched command that deletes the store: the history survives, or the call is refused
    with a verdict that does not say "restored". (c) is checked against the venv as it was
    before the earlier transaction: its removed bytes live only in the store."""

    def with_history(self):
        original = dict(self.before)
        self.assertEqual(self.venvtx("remove", "flash-attn", timeout=T).returncode, 0)
        self.snapshot()
        return original

    def history_kept(self, proc):
        index = os.path.join(self.venv, ".venvtx", "index.sqlite")
        log = self.log() if os.path.exists(index) else []
        kept = any(t["id"] == 1 and t["kind"] == "remove" for t in log)
        if not kept:
            self.assertNotEqual(proc.returncode, 0, "the history is gone and the run committed" + self.verdict(proc))
            self.assertFalse(claims_restored(self.said(proc)),
                             "the history is gone and the verdict says restored" + self.verdict(proc))
        return kept

    def test_run_rm_rf_store(self):
        original = self.with_history()
        proc = self.venvtx("run", "--", "rm", "-rf", os.path.join(self.venv, ".venvtx"), timeout=T)
        self.assertSentinelIntact(proc=proc)
        self.history_kept(proc)
        self.assertTree(self.before, proc)
        self.assertNoByteLost(before=original)

    def test_run_venv_clear(self):
        original = self.with_history()
        proc = self.venvtx("run", "--", os.path.join(self.venv, "bin", "python"), "-m", "venv", "--clear",
                           "--without-pip", self.venv, timeout=T)
        self.assertSentinelIntact(proc=proc)
        self.history_kept(proc)
        self.assertNoByteLost(before=original)
        if proc.returncode == 0:
            rollback = self.venvtx("rollback", timeout=T)
            self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
            self.assertTree(self.before, rollback)
            return
        self.assertVerdictAccountsFor(self.before, proc)
        if "recover" in self.said(proc):  # exit 1 may leave it marked for `recover`
            recover = self.venvtx("recover", timeout=T)
            self.assertEqual(recover.returncode, 0, self.verdict(recover))
            self.assertSentinelIntact(proc=recover)
            self.assertTree(self.before, recover)


class TornHistory(ContainmentCase):
    """A zero-length or missing index beside existing objects: every command exits 5 with one
    line saying what it found, and changes nothing (never a fresh history)."""

    COMMANDS = [("log",), ("show", "1"), ("verify",), ("recover",), ("rollback",), ("remove", "sglang"),
                ("run", "--", "true")]

    def check(self, damage):
        self.assertEqual(self.venvtx("remove", "flash-attn", timeout=T).returncode, 0)
        store = os.path.join(self.venv, ".venvtx")
        index = os.path.join(store, "index.sqlite")
        for suffix in ("-wal", "-shm", "-journal"):
            if os.path.exists(index + suffix):
                os.unlink(index + suffix)
        damage(index)
        self.assertTrue(self.stored_files())
        self.snapshot()
        damaged = os.path.join(self.tmp, "damaged")
        subprocess.run(["cp", "-a", self.venv, damaged], check=True, timeout=T)
        store_before = tree_hash(store)
        problems = []
        for args in self.COMMANDS:
            proc = self.venvtx(*args, timeout=T)
            message = proc.stderr.strip().replace(self.tmp, "<tmp>")  # the temp dir's name says "index"
            wrong = []
            if proc.returncode != 5:
                wrong.append("exit %d" % proc.returncode)
            if not (message.startswith("venvtx: ") and "\n" not in message and "index" in message.lower()):
                wrong.append("not one line about the index: %r" % (message or proc.stdout)[-160:])
            if tree_hash(self.venv) != self.before:
                wrong.append("changed the venv")
                shutil.rmtree(self.venv)  # each command meets the same damage
                subprocess.run(["cp", "-a", damaged, self.venv], check=True, timeout=T)
            elif tree_hash(store) != store_before:
                wrong.append("changed the store")
                shutil.rmtree(store)
                subprocess.run(["cp", "-a", os.path.join(damaged, ".venvtx"), store], check=True, timeout=T)
            if wrong:
                problems.append("venvtx %s: %s" % (" ".join(args), "; ".join(wrong)))
        self.assertSentinelIntact()
        if problems:
            self.fail("under a broken index (temp dir %s):\n  %s" % (self.tmp, "\n  ".join(problems)))

    def test_zero_length_index(self):
        self.check(lambda index: open(index, "w").close())

    def test_missing_index(self):
        self.check(os.unlink)


class ProbeHygiene(ContainmentCase):
    """A probe's children: the verdict is the interpreter's exit status, venvtx does not wait on
    pipes they inherited, and nothing the probe started survives it."""

    def timed(self, *args):
        start = time.monotonic()
        proc = self.venvtx(*args, timeout=T)
        return proc, time.monotonic() - start

    def check(self, spawn):
        tag = unique_tag()
        self.addCleanup(kill_tagged, tag)
        # --probe-timeout 8: a venvtx that waits on the pipes fails in seconds, not the default 300
        control, control_s = self.timed("remove", "flash-attn", "--probe-timeout", "8", "--probe",
                                        "import os, subprocess")
        self.assertEqual(control.returncode, 0, self.verdict(control))
        self.assertEqual(self.venvtx("rollback", timeout=T).returncode, 0)
        self.snapshot()
        probe = "import os, subprocess\n" + spawn % {"tag": tag}
        proc, took = self.timed("remove", "flash-attn", "--probe-timeout", "8", "--probe", probe)
        time.sleep(0.3)
        survivors = processes_with_arg(tag)
        self.assertSentinelIntact(proc=proc)
        self.assertEqual(proc.returncode, 0, "the probe passed; after %.1fs%s" % (took, self.verdict(proc)))
        self.assertIn("committed", proc.stdout)
        self.assertLess(took, control_s + 2.0, "took %.1fs, the same remove without children %.1fs"
                        % (took, control_s))
        self.assertEqual(survivors, [], "processes the probe started outlived it: `sleep %s`" % tag)
        self.assertNoByteLost()

    def test_child_holding_stdout(self):
        self.check('subprocess.Popen(["sleep", "%(tag)s"])')

    def test_setsid_child_holding_stdout(self):
        self.check('subprocess.Popen(["setsid", "sleep", "%(tag)s"])')

    def test_daemonized_child(self):
        self.check('subprocess.Popen(["sleep", "%(tag)s"], start_new_session=True, stdin=subprocess.DEVNULL, '
                   'stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)')


class Drift(ContainmentCase):
    """A rollback never silently overwrites a change made after the transaction: exit 6 naming
    the path, nothing touched; --force stores the drifted bytes first."""

    def assertDriftRefused(self, proc, drifted, names):
        self.assertSentinelIntact(proc=proc)
        self.assertTree(drifted, proc)
        self.assertEqual(proc.returncode, 6, self.verdict(proc))
        self.assertIn(names, self.said(proc))

    def test_control_remove_then_rollback(self):
        self.assertEqual(self.venvtx("remove", "sglang", timeout=T).returncode, 0)
        proc = self.venvtx("rollback", timeout=T)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        self.assertSentinelIntact(proc=proc)
        self.assertTree(self.before, proc)

    def edited_after_run(self):
        target = self.in_site("flashinfer", "__init__.py")
        proc = self.venvtx("run", "--", "sh", "-c", "echo '# by the command' >> '%s'" % target, timeout=T)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        with open(target, "a") as f:
            f.write("# the user's edit, after the transaction\n")
        return target, self.read(target)

    def test_rollback_refuses_a_user_edit_of_a_changed_file(self):
        target, edited = self.edited_after_run()
        drifted = tree_hash(self.venv)
        proc = self.venvtx("rollback", timeout=T)
        self.assertEqual(self.read(target), edited, "the rollback discarded the user's edit" + self.verdict(proc))
        self.assertDriftRefused(proc, drifted, "flashinfer/__init__.py")

    def test_rollback_force_stores_the_drifted_bytes_first(self):
        target, edited = self.edited_after_run()
        proc = self.venvtx("rollback", "--force", timeout=T)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        self.assertSentinelIntact(proc=proc)
        self.assertTree(self.before, proc)
        self.assertIn(hashlib.sha256(edited).hexdigest(), self.stored_hashes(),
                      "--force overwrote the user's edit without storing it")

    def test_rollback_refuses_a_file_recreated_where_the_remove_deleted_one(self):
        self.assertEqual(self.venvtx("remove", "sglang", timeout=T).returncode, 0)
        self.write(self.in_site("sglang", "__init__.py"), "# the user's own sglang shim\n")
        drifted = tree_hash(self.venv)
        self.assertDriftRefused(self.venvtx("rollback", timeout=T), drifted, "sglang/__init__.py")

    def test_rollback_of_the_install_drifted_but_the_outside_pip_install_is_undone(self):
        wheels = story_template()
        env = dict(self.env, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
        find = ["--no-index", "--find-links", os.path.join(wheels, "wheels"),
                "--find-links", os.path.join(wheels, "wheels-extra")]
        proc = self.venvtx("install", "--installer", "pip", "torch==2.12.0", "--", "-q", *find, env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        installed = tree_hash(self.venv)
        pip = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "-q",
                              "torch==2.11.0", *find], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(pip.returncode, 0, pip.stderr)
        drifted = tree_hash(self.venv)
        proc = self.venvtx("rollback", "1", timeout=T)  # the install by name: it drifted
        self.assertDriftRefused(proc, drifted, "torch")
        self.assertRegex(self.said(proc), r"2\.11\.0|2\.12\.0", "name the versions that drifted")
        # The newest change is pip's: undone from the files the install's state held.
        proc = self.venvtx("rollback", timeout=T)
        self.assertSentinelIntact(proc=proc)
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        self.assertTree(installed, proc)


# What each watched command below starts with: its steps are logged, one line each ("NAME ok" or
# "NAME EPERM"), to a file opened before anything else (a chroot cannot hide it). A refused call
# that later steps need ends the command with status 0: the probe, not the command, decides.
COMMAND_PRELUDE = r'''
import errno, os, shutil, socket, sys
_STEPS = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


def done():
    os.write(_STEPS, b"end ok\n")
    os._exit(0)


def step(name, fn, *args, stop=True):
    try:
        result = fn(*args)
    except OSError as e:
        os.write(_STEPS, ("%s %s\n" % (name, errno.errorcode.get(e.errno, e.errno))).encode())
        if stop:
            done()
        return None
    os.write(_STEPS, ("%s ok\n" % name).encode())
    return result


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)
'''


# Two calls Python has no function for: linkat(fd, "", AT_EMPTY_PATH) and renameat2(RENAME_EXCHANGE).
LINK_FROM_DESCRIPTOR = r'''
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)


def _checked(result):
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def link_from_descriptor(source, name):
    fd = os.open(source, os.O_RDONLY)
    _checked(_libc.linkat(fd, b"", -100, name.encode(), 0x1000))


def exchange(a, b):
    _checked(_libc.renameat2(-100, a.encode(), -100, b.encode(), 2))
'''


class WatchedCommandEscapes(ContainmentCase):
    """Issue 10, "Touch capture misses or mis-restores", "Special files wedge the venv" and "A
    watched command can destroy the history": a python script run by the venv's interpreter under
    `venvtx run --preview never --no-baseline --probe P` (in place, touch capture) changes the
    venv by a way a watcher can miss: a file moved out and edited there, a directory renamed over
    a directory, a same-size rewrite that keeps the mtime, paths through /proc/self and `link/..`,
    a chroot, a fifo and a socket, a hard link out, the store or the venv root itself. With the failing probe
    the change must be undone (exit 3); with `pass` it commits and a rollback must bring the
    before-state back exactly. A refused call (EPERM) is fine for what the issue lets venvtx refuse
    (chroot, fifo, socket, a second name outside, the store, the venv root), never for an ordinary
    one (`ordinary=`). The command's own writes outside the venv go to <tmp>/outside, which is not
    the sentinel, and are checked on their own."""

    FAILING = "raise SystemExit(1)"

    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.tmp, "outside")  # the command's own place outside the venv
        os.mkdir(self.outside)
        self.steps = {}

    # --- running a command ------------------------------------------------------------------

    def watch(self, body, passing=False, **paths):
        """Runs `body` (python, after COMMAND_PRELUDE; `V` holds the paths) under venvtx run."""
        script = os.path.join(self.tmp, "command.py")
        self.steps_path = os.path.join(self.tmp, "command.steps")
        paths = dict(venv=self.venv, site=self.site, outside=self.outside, **paths)
        self.write(script, COMMAND_PRELUDE + LINK_FROM_DESCRIPTOR + "V = %r\n" % paths + textwrap.dedent(body) + "\ndone()\n")
        proc = self.venvtx("run", "--preview", "never", "--no-baseline", "--probe", "pass" if passing else self.FAILING, "--",
                           os.path.join(self.venv, "bin", "python"), "-B", script, self.steps_path, timeout=T)
        self.steps = {}
        if os.path.exists(self.steps_path):
            for line in self.read(self.steps_path).decode().splitlines():
                name, _, status = line.partition(" ")
                self.steps[name] = status
        return proc

    def done(self, name):
        return self.steps.get(name) == "ok"

    def refused(self):
        """The command's calls that did not go through, and "end" if it did not finish."""
        bad = ["%s %s" % (name, status) for name, status in self.steps.items() if status != "ok"]
        return bad + ([] if "end" in self.steps else ["end: the command did not finish"])

    def context(self, proc):
        return "\ncommand steps: %s (temp dir %s)%s" % (self.steps, self.tmp, self.verdict(proc))

    # --- the outcome ------------------------------------------------------------------------

    def assertOutcome(self, proc, passing, sentinel=None, ordinary=(), committed=None):
        """(a), (b), (c), no inode shared with the outside, and the exit code; after a commit,
        `committed()` checks the committed state, then a rollback must give back the
        before-state exactly. Last, the `ordinary` calls must not have been refused."""
        self.assertSentinelIntact(sentinel, proc)
        self.assertNoByteLost()
        self.assertNoSharedInode(proc)
        refused = self.refused()
        if passing and proc.returncode == 0:
            if not refused:
                self.assertNotEqual(tree_hash(self.venv), self.before, "the command changed nothing?"
                                    + self.context(proc))
            if committed is not None:
                committed()
            rollback = self.venvtx("rollback", timeout=T)
            self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
            self.assertSentinelIntact(sentinel, rollback)
            self.assertTree(self.before, rollback)
            self.assertNoByteLost()
            self.assertNoSharedInode(rollback, strict=True)
        else:
            if passing:
                self.assertTrue(refused, "the command ran through, the probe passed, venvtx did not commit"
                                + self.context(proc))
                self.assertIn(proc.returncode, (1, 2), self.context(proc))
            elif refused:
                self.assertIn(proc.returncode, (1, 2, 3), self.context(proc))
            else:
                self.assertEqual(proc.returncode, 3, "the command ran through and the probe failed"
                                 + self.context(proc))
            self.assertVerdictAccountsFor(self.before, proc)
            if proc.returncode == 3 and tree_hash(self.venv) == self.before:
                self.assertTrue(claims_restored(self.said(proc)), "exit 3 and restored, but not said so"
                                + self.context(proc))
            if "recover" in self.said(proc):  # exit 1 may leave it marked for `recover`
                recover = self.venvtx("recover", timeout=T)
                self.assertEqual(recover.returncode, 0, self.verdict(recover))
                self.assertSentinelIntact(sentinel, recover)
                self.assertNoByteLost()
                self.assertVerdictAccountsFor(self.before, recover)
                self.assertNoSharedInode(recover)
        for name in ordinary:
            self.assertTrue(self.done(name), "venvtx refused (or never let run) the ordinary call %r" % name
                            + self.context(proc))

    def assertNoSharedInode(self, proc, strict=False):
        """No name outside the venv shares an inode with a venv file or a store object (an edit
        there would change the venv, or a pre-image, unseen), or the verdict names each such
        outside name and does not claim the venv is back."""
        shared = self.shared_inodes()
        if not shared:
            return
        text = self.said(proc)
        said = not strict and not claims_restored(text) and all(os.path.basename(out) in text for out, _ in shared)
        self.assertTrue(said, "names outside the venv share an inode with the venv or its store: %s"
                        % ", ".join("%s = %s" % pair for pair in shared) + self.context(proc))

    def shared_inodes(self):
        """(outside name, venv name) pairs of regular files with one inode: outside = the sentinel
        and <tmp>/outside; venv = anything under it, the store included, but for the store's
        holds: a hold is a second name of a venv file that may leave the venv with it, and is never
        trusted (its bytes are hashed before any use, and it is copied where it has other names)."""
        inside = {}
        holds = os.path.join(self.venv, ".venvtx", "holds")
        for dirpath, _, files in os.walk(self.venv):
            if dirpath == holds:
                continue
            for name in files:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode):
                    inside[(st.st_dev, st.st_ino)] = os.path.relpath(path, self.venv)
        shared = []
        for top in (self.sentinel, self.outside):
            for dirpath, _, files in os.walk(top):
                for name in files:
                    path = os.path.join(dirpath, name)
                    st = os.lstat(path)
                    if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in inside:
                        shared.append((os.path.relpath(path, self.tmp), inside[(st.st_dev, st.st_ino)]))
        return shared

    # --- 1. a venv file moved out of the venv, then edited there ----------------------------

    def check_move_out_and_edit(self, passing):
        victim = self.in_site("sglang", "launch_server.py")
        moved = os.path.join(self.sentinel, "moved-launch_server.py")
        original, appended = self.read(victim), b"# edited outside the venv\n"
        proc = self.watch('''
            step("rename-out", os.rename, V["victim"], V["moved"])
            step("append-outside", append, V["moved"], %r)
            ''' % appended, passing, victim=victim, moved=moved)
        # The moved file is the command's, outside: venvtx must leave it as the command left it.
        left = original + (appended if self.done("append-outside") else b"")
        sentinel = dict(self.sentinel_before)
        if self.done("rename-out"):
            sentinel["moved-launch_server.py"] = ("file", 0o644, len(left), hashlib.sha256(left).hexdigest())
        if not passing and os.path.exists(victim):
            self.assertEqual(self.read(victim), original, "the restore gave back the edited bytes"
                             + self.context(proc))

        def committed():
            self.assertFalse(os.path.lexists(victim), self.context(proc))

        self.assertOutcome(proc, passing, sentinel, ("rename-out", "append-outside"), committed)

    def test_move_out_and_edit_failing_probe_restores_original_bytes(self):
        self.check_move_out_and_edit(passing=False)

    def test_move_out_and_edit_passing_probe_then_rollback(self):
        self.check_move_out_and_edit(passing=True)

    # --- 2. a directory renamed over an existing empty directory ----------------------------

    def check_dir_over_dir(self, passing, build_inside):
        target = self.in_site("emptypkg")
        os.mkdir(target)
        self.snapshot()
        new = self.in_site("emptypkg.new") if build_inside else os.path.join(self.outside, "emptypkg.new")
        proc = self.watch('''
            step("mkdir", os.makedirs, V["new"] + "/sub")
            step("write-a", write, V["new"] + "/a.py", b"A = 1\\n")
            step("write-b", write, V["new"] + "/sub/b.py", b"B = 2\\n")
            step("rename-over", os.rename, V["new"], V["target"])
            ''', passing, new=new, target=target)

        def committed():
            self.assertEqual(self.read(os.path.join(target, "sub", "b.py")), b"B = 2\n", self.context(proc))

        self.assertOutcome(proc, passing, ordinary=("mkdir", "write-a", "write-b", "rename-over"),
                           committed=committed)
        self.assertFalse(os.path.lexists(new), "the command's renamed tree came back" + self.context(proc))

    def test_dir_built_inside_renamed_over_empty_dir_failing_probe(self):
        self.check_dir_over_dir(passing=False, build_inside=True)

    def test_dir_built_outside_renamed_over_empty_dir_failing_probe(self):
        self.check_dir_over_dir(passing=False, build_inside=False)

    def test_dir_built_inside_renamed_over_empty_dir_passing_probe_then_rollback(self):
        self.check_dir_over_dir(passing=True, build_inside=True)

    # --- 3. a same-size rewrite that keeps the mtime ----------------------------------------

    def check_same_size_rewrite(self, passing):
        target = self.in_site("flashinfer", "__init__.py")
        original = self.read(target)
        rewritten = b"#" + original[1:]
        self.assertNotEqual(rewritten, original)
        mtime_ns = os.lstat(target).st_mtime_ns
        proc = self.watch('''
            st = os.stat(V["target"])
            fd = step("open-for-writing", os.open, V["target"], os.O_WRONLY)
            step("write", os.write, fd, V["rewritten"])
            os.close(fd)
            step("utime", lambda: os.utime(V["target"], ns=(st.st_atime_ns, st.st_mtime_ns)))
            ''', passing, target=target, rewritten=rewritten)

        def committed():  # the command did what it meant to: new bytes, same size, same mtime
            self.assertEqual((self.read(target), os.lstat(target).st_mtime_ns), (rewritten, mtime_ns))

        self.assertOutcome(proc, passing, ordinary=("open-for-writing", "write", "utime"), committed=committed)

    def test_same_size_rewrite_keeping_mtime_failing_probe(self):
        self.check_same_size_rewrite(passing=False)

    def test_same_size_rewrite_keeping_mtime_passing_probe_then_rollback(self):
        self.check_same_size_rewrite(passing=True)

    # --- 4. paths the kernel resolves in the command's view ---------------------------------

    def check_proc_self_fd(self, passing):
        proc = self.watch('''
            dfd = step("open-dir", os.open, V["site"] + "/flashinfer", os.O_RDONLY | os.O_DIRECTORY)
            step("append-through-dir-fd", append, "/proc/self/fd/%d/__init__.py" % dfd, b"# via fd\\n")
            step("mkdir-through-dir-fd", os.mkdir, "/proc/self/fd/%d/newdir" % dfd)
            sfd = step("open-sglang", os.open, V["site"] + "/sglang", os.O_RDONLY | os.O_DIRECTORY)
            step("unlink-through-dir-fd", os.unlink, "/proc/self/fd/%d/__init__.py" % sfd)
            ffd = step("open-read-only", os.open, V["site"] + "/sglang/launch_server.py", os.O_RDONLY)
            step("reopen-for-writing", append, "/proc/self/fd/%d" % ffd, b"# reopened for writing\\n")
            ''', passing)
        self.assertOutcome(proc, passing, ordinary=("append-through-dir-fd", "mkdir-through-dir-fd",
                                                    "unlink-through-dir-fd", "reopen-for-writing"))

    def test_writes_through_proc_self_fd_failing_probe(self):
        self.check_proc_self_fd(passing=False)

    def test_writes_through_proc_self_fd_passing_probe_then_rollback(self):
        self.check_proc_self_fd(passing=True)

    def check_proc_self_cwd(self, passing):
        # venvtx runs in <tmp>: /proc/self/cwd read in its own process is <tmp>, outside the venv.
        proc = self.watch('''
            step("chdir", os.chdir, V["site"])
            step("append-through-cwd", append, "/proc/self/cwd/flashinfer/__init__.py", b"# via cwd\\n")
            step("unlink-through-cwd", os.unlink, "/proc/self/cwd/sglang/launch_server.py")
            step("mkdir-through-cwd", os.mkdir, "/proc/self/cwd/newpkg")
            step("write-through-cwd", write, "/proc/self/cwd/newpkg/__init__.py", b"x = 1\\n")
            ''', passing)
        self.assertOutcome(proc, passing, ordinary=("append-through-cwd", "unlink-through-cwd",
                                                    "mkdir-through-cwd", "write-through-cwd"))

    def test_writes_through_proc_self_cwd_failing_probe(self):
        self.check_proc_self_cwd(passing=False)

    def test_writes_through_proc_self_cwd_passing_probe_then_rollback(self):
        self.check_proc_self_cwd(passing=True)

    def check_link_dotdot(self, passing):
        # <site>/outlink -> <tmp>/outside/dir, so the kernel takes <site>/outlink/../X to
        # <tmp>/outside/X, not <site>/X; <tmp>/outside/back -> <site>/flashinfer leads back in.
        os.mkdir(os.path.join(self.outside, "dir"))
        os.symlink(os.path.join(self.outside, "dir"), self.in_site("outlink"))
        os.symlink(self.in_site("flashinfer"), os.path.join(self.outside, "back"))
        self.write(self.in_site("written.txt"), "a venv file whose name the outside write shares\n")
        self.snapshot()
        own = b"the command's own file, outside the venv\n"
        proc = self.watch('''
            step("write-outside", write, V["site"] + "/outlink/../written.txt", V["own"])
            step("append-back-in", append, V["site"] + "/outlink/../back/__init__.py", b"# via link/..\\n")
            step("mkdir-back-in", os.mkdir, V["site"] + "/outlink/../back/newdir")
            ''', passing, own=own)
        self.assertOutcome(proc, passing, ordinary=("write-outside", "append-back-in", "mkdir-back-in"))
        self.assertEqual(self.read(os.path.join(self.outside, "written.txt")), own,
                         "venvtx changed the command's file outside the venv" + self.context(proc))

    def test_writes_through_link_dotdot_failing_probe(self):
        self.check_link_dotdot(passing=False)

    def test_writes_through_link_dotdot_passing_probe_then_rollback(self):
        self.check_link_dotdot(passing=True)

    # --- 5. a chroot into the venv ----------------------------------------------------------

    def check_chroot(self, passing):
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        works = subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", "import os; os.chroot(%r)" % self.venv],
                               capture_output=True, timeout=T)
        if works.returncode != 0:
            self.skipTest("chroot is not allowed here: %s" % works.stderr.decode()[-200:])
        inside = "/" + os.path.relpath(self.in_site("flashinfer", "__init__.py"), self.venv)
        gone = "/" + os.path.relpath(self.in_site("sglang", "launch_server.py"), self.venv)
        proc = self.watch('''
            step("chroot", os.chroot, V["venv"])
            step("chdir", os.chdir, "/")
            step("append-in-chroot", append, V["inside"], b"# written inside the chroot\\n")
            step("unlink-in-chroot", os.unlink, V["gone"])
            step("mkdir-in-chroot", os.mkdir, "/venvtx-chroot-newdir")
            ''', passing, inside=inside, gone=gone)
        self.assertOutcome(proc, passing)

    def test_chroot_into_venv_failing_probe(self):
        self.check_chroot(passing=False)

    def test_chroot_into_venv_passing_probe_then_rollback(self):
        self.check_chroot(passing=True)

    # --- 6. a fifo and a unix socket ----------------------------------------------------------

    def check_special_node(self, passing, body, **paths):
        """A node that is neither file, directory nor link: refused or recorded, never a wedge."""
        proc = self.watch(body, passing, **paths)
        try:
            self.assertOutcome(proc, passing)
            outcome = None
        except AssertionError as failure:  # still check for a wedge below, then report it
            outcome = failure
        # the transaction ended cleanly: `log` works, the next mutating command is not exit 5
        also = "" if outcome is None else "\n(and before that: %s)" % outcome
        log = self.venvtx("log", timeout=T)
        self.assertEqual(log.returncode, 0, self.verdict(log) + also)
        now = tree_hash(self.venv)
        remove = self.venvtx("remove", "flash-attn", timeout=T)
        self.assertEqual(remove.returncode, 0, "the next mutating command" + self.verdict(remove)
                         + self.context(proc) + also)
        rollback = self.venvtx("rollback", timeout=T)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback) + also)
        self.assertEqual(tree_hash(self.venv), now, "the remove's rollback" + self.verdict(rollback) + also)
        self.assertSentinelIntact(proc=rollback)
        if outcome is not None:
            raise outcome

    def check_fifo(self, passing):
        self.check_special_node(passing, '''
            step("mkfifo", os.mkfifo, V["fifo"])
            ''', fifo=self.in_site("sglang", "the.fifo"))

    def check_unix_socket(self, passing):
        sock = os.path.join(self.venv, "s.sock")  # bind() takes at most 107 bytes
        self.assertLess(len(sock), 100, "the socket path is too long for bind()")
        self.check_special_node(passing, '''
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            step("bind", s.bind, V["sock"])
            s.close()
            ''', sock=sock)

    def test_fifo_failing_probe(self):
        self.check_fifo(passing=False)

    def test_fifo_passing_probe_then_rollback(self):
        self.check_fifo(passing=True)

    def test_unix_socket_failing_probe(self):
        self.check_unix_socket(passing=False)

    def test_unix_socket_passing_probe_then_rollback(self):
        self.check_unix_socket(passing=True)

    # --- 7. a hard link from a venv file to a name outside -----------------------------------

    def check_hard_link_out(self, passing, link="os.link"):
        victim = self.in_site("sglang", "launch_server.py")
        outname = os.path.join(self.outside, "hardlinked-launch_server.py")
        original, appended = self.read(victim), b"# written through the outside name\n"
        proc = self.watch('''
            step("link-out", %s, V["victim"], V["outname"])
            step("append-through-outside-name", append, V["outname"], %r)
            ''' % (link, appended), passing, victim=victim, outname=outname)
        if self.done("link-out"):  # the outside name is the command's: venvtx must not change it
            self.assertEqual(self.read(outname), original + appended, "venvtx changed a file outside the venv"
                             + self.context(proc))
        if not passing and self.done("link-out") and os.path.exists(victim):
            self.assertEqual(self.read(victim), original, "the restore gave back the bytes written "
                             "through the outside name" + self.context(proc))
        self.assertOutcome(proc, passing)

    def test_hard_link_out_failing_probe(self):
        self.check_hard_link_out(passing=False)

    def test_hard_link_out_passing_probe_then_rollback(self):
        self.check_hard_link_out(passing=True)

    def test_hard_link_out_from_a_descriptor_failing_probe(self):
        self.check_hard_link_out(passing=False, link="link_from_descriptor")  # linkat(fd, "", AT_EMPTY_PATH)

    def test_hard_link_out_from_a_descriptor_passing_probe_then_rollback(self):
        self.check_hard_link_out(passing=True, link="link_from_descriptor")

    # --- 7b. an outside file exchanged with a venv file, then the venv's old inode edited outside

    def check_exchange_out_and_edit(self, passing):
        victim = self.in_site("sglang", "launch_server.py")
        incoming = os.path.join(self.outside, "incoming.py")
        self.write(incoming, b"INCOMING = 1\n")
        original, appended = self.read(victim), b"# edited outside after the exchange\n"
        proc = self.watch('''
            step("exchange", exchange, V["incoming"], V["victim"])
            step("append-outside", append, V["incoming"], %r)
            ''' % appended, passing, victim=victim, incoming=incoming)
        if self.done("append-outside"):  # the venv's old inode, outside now: the command's to keep
            self.assertEqual(self.read(incoming), original + appended, "venvtx changed a file outside the venv"
                             + self.context(proc))
        if not passing and os.path.exists(victim):
            self.assertEqual(self.read(victim), original, "the restore gave back the bytes edited outside"
                             + self.context(proc))
        self.assertOutcome(proc, passing, ordinary=("exchange", "append-outside"))

    def test_exchange_out_and_edit_failing_probe_restores_original_bytes(self):
        self.check_exchange_out_and_edit(passing=False)

    def test_exchange_out_and_edit_passing_probe_then_rollback(self):
        self.check_exchange_out_and_edit(passing=True)

    # --- 8. the store and the venv root ------------------------------------------------------

    def check_history_survives(self, body, **paths):
        original = dict(self.before)
        first = self.venvtx("remove", "flash-attn", timeout=T)
        self.assertEqual(first.returncode, 0, self.verdict(first))
        objects = self.stored_files()
        self.assertTrue(objects)
        self.snapshot()
        proc = self.watch(body, **paths)
        self.assertTrue(os.path.isdir(self.venv), "the venv root is gone" + self.context(proc))
        self.assertTrue(self.refused(), "the command ran through: nothing was refused" + self.context(proc))
        log_proc, log = self.venvtx_json("log", timeout=T)
        self.assertEqual(log_proc.returncode, 0, self.verdict(log_proc) + self.context(proc))
        self.assertIn((1, "remove", "committed"), [(t["id"], t["kind"], t["state"]) for t in log],
                      self.context(proc))
        self.assertEqual([f for f in objects if not os.path.exists(f)], [], "stored objects are gone"
                         + self.context(proc))
        self.assertSentinelIntact(proc=proc)
        self.assertIn(proc.returncode, (1, 2, 3), self.context(proc))
        self.assertVerdictAccountsFor(self.before, proc)
        self.assertNoByteLost(before=original)
        rollback = self.venvtx("rollback", timeout=T)  # the earlier remove can still be undone
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertTree(original, rollback)
        self.assertSentinelIntact(proc=rollback)

    def test_command_deletes_the_store(self):
        # every file and directory of the store is tried (a refusal of the first is not enough),
        # then the first refusal is reported
        self.check_history_survives('''
            def delete_all(top):
                errors = []
                for dirpath, dirnames, filenames in os.walk(top, topdown=False):
                    for name in filenames + dirnames:
                        path = os.path.join(dirpath, name)
                        try:
                            os.rmdir(path) if name in dirnames and not os.path.islink(path) else os.unlink(path)
                        except OSError as e:
                            errors.append(e)
                try:
                    os.rmdir(top)
                except OSError as e:
                    errors.append(e)
                if errors:
                    raise errors[0]
            step("delete-store", delete_all, V["store"])
            ''', store=os.path.join(self.venv, ".venvtx"))

    def test_command_moves_the_store_out(self):
        self.check_history_survives('''
            step("rename-store-out", os.rename, V["store"], V["outside"] + "/stolen-store")
            ''', store=os.path.join(self.venv, ".venvtx"))

    def test_command_renames_the_venv_root_away(self):
        self.check_history_survives('''
            step("rename-venv-away", os.rename, V["venv"], V["venv"] + ".moved")
            ''')


class LinkCaptureNamesOutside(ContainmentCase):
    """Issue 41, item 6: under `--capture link` a pre-image is a hard link made before the
    command. A venv file the command moves or exchanges out of the venv lives on there as that
    same inode, so the store must keep a copy of its own: an edit through the outside name after
    the commit (or after the restore) reaches neither the store nor the venv."""

    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.tmp, "outside")  # the command's own place, not the sentinel
        os.mkdir(self.outside)
        self.victim = self.in_site("sglang", "launch_server.py")
        self.moved = os.path.join(self.outside, "launch_server.py")
        self.original = self.read(self.victim)

    def linked_run(self, code, passing):
        script = "import ctypes, os, sys\nV, M = sys.argv[1], sys.argv[2]\n" + textwrap.dedent(code)
        return self.venvtx("run", "--capture", "link", "--preview", "never", "--no-baseline", "--probe",
                           "pass" if passing else "raise SystemExit(1)", "--",
                           os.path.join(self.venv, "bin", "python"), "-B", "-c", script, self.victim, self.moved,
                           timeout=T)

    def edit_outside_then_roll_back(self, proc):
        self.assertEqual(proc.returncode, 0, self.verdict(proc))
        with open(self.moved, "ab") as f:  # in place: the inode the venv's name had
            f.write(b"# edited outside after the commit\n")
        self.assertNoByteLost()
        rollback = self.venvtx("rollback", timeout=T)
        self.assertEqual(rollback.returncode, 0, self.verdict(rollback))
        self.assertTree(self.before, rollback)
        self.assertSentinelIntact(proc=rollback)

    def test_moved_out_then_edited_after_the_commit(self):
        self.edit_outside_then_roll_back(self.linked_run("os.rename(V, M)\n", passing=True))

    def test_exchanged_out_then_edited_after_the_commit(self):
        self.write(self.moved, "# an outside file, exchanged into the venv\n")
        self.edit_outside_then_roll_back(self.linked_run("""
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.renameat2(-100, M.encode(), -100, V.encode(), 2) != 0:  # RENAME_EXCHANGE
                raise OSError(ctypes.get_errno(), "renameat2")
            """, passing=True))

    def test_moved_out_restored_then_edited(self):
        proc = self.linked_run("os.rename(V, M)\n", passing=False)
        self.assertEqual(proc.returncode, 3, self.verdict(proc))
        self.assertTree(self.before, proc)
        with open(self.moved, "ab") as f:
            f.write(b"# edited outside after the restore\n")
        self.assertEqual(self.read(self.victim), self.original, "the restore gave the venv the outside inode back")
        self.assertNoByteLost()


if __name__ == "__main__":
    unittest.main()
