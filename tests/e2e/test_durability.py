"""Durability you can test (issue 24): kill -9 cannot show a missing flush (a killed process's
writes still reach the disk), so these read the order of flushes and renames from a syscall
trace (strace -y names each descriptor's path). The flushes that must come first, as
docs/design.md lists them: the index's WAL before the first venv file moves (the journal, with
synchronous=FULL), and, before the index says where the files put back are, each of them
(fdatasync, under its own name or its package's shadow's) and each directory that took one
(fsync, after the last rename into it), or the whole filesystem (syncfs)."""
import os
import re
import shutil
import subprocess

from support import VENVTX, VenvTestCase

CALL = re.compile(r"^\d+\s+(\w+)\((.*)\) = (-?\d+)")
PATH = re.compile(r"<([^>]*)>")
RENAME_AT = re.compile(r'^-?\d+<([^>]*)>, "([^"]*)", -?\d+<([^>]*)>, "([^"]*)"')


class FlushOrder(VenvTestCase):
    def setUp(self):
        super().setUp()
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        self.store = os.path.join(self.venv, ".venvtx")

    def traced(self, *args, rc=0, env=None):
        """(call, [paths of its descriptors], its arguments) for each write, flush and rename of
        `venvtx args`."""
        trace = os.path.join(self.tmp, "trace.txt")
        proc = subprocess.run(["strace", "-f", "-y", "-qq", "-o", trace, "-e",
                               "trace=fsync,fdatasync,syncfs,rename,renameat,renameat2,pwrite64,write",
                               VENVTX, "--venv", self.venv, *args],
                              capture_output=True, text=True, env=env or self.env, cwd=self.tmp)
        if proc.returncode != rc and "ptrace" in proc.stderr:
            self.skipTest("strace may not trace here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, rc, proc.stdout + proc.stderr)
        calls = []
        with open(trace) as f:
            for line in f:
                found = CALL.match(line)
                if found and int(found.group(3)) >= 0:
                    calls.append((found.group(1), PATH.findall(found.group(2)), found.group(2)))
        return calls

    def in_venv(self, path):
        return (path == self.venv or path.startswith(self.venv + "/")) and not \
            (path == self.store or path.startswith(self.store + "/"))

    def index_flush(self, call):
        return call[0] in ("fsync", "fdatasync") and call[1] and call[1][0].endswith(
            ("index.sqlite-wal", "index.sqlite"))

    def index_write(self, call):
        return call[0] in ("pwrite64", "write") and call[1] and call[1][0].endswith("index.sqlite-wal")

    def moves_in_venv(self, call):
        """A rename whose source or target directory is the venv's own (not the store's)."""
        return call[0].startswith("rename") and any(self.in_venv(path) for path in call[1])

    def test_the_journal_is_flushed_before_the_first_file_leaves_the_venv(self):
        calls = self.traced("remove", "sglang", "--preview", "never", "--no-baseline")
        first_move = next(i for i, call in enumerate(calls) if self.moves_in_venv(call))
        last_write = max(i for i, call in enumerate(calls[:first_move]) if self.index_write(call))
        self.assertTrue(any(self.index_flush(call) for call in calls[last_write:first_move]),
                        "the journal's last write was not flushed before %s" % (calls[first_move],))

    def test_files_put_back_are_flushed_before_the_index_says_so(self):
        # Each package switched at once (its exchange is the last move), and path by path, as
        # where the filesystem has no RENAME_EXCHANGE (each file put back is a move).
        for path_by_path in (False, True):
            with self.subTest(path_by_path=path_by_path):
                self.files_put_back_are_flushed(dict(self.env, VENVTX_NO_EXCHANGE="1") if path_by_path else None)

    def files_put_back_are_flushed(self, env):
        for args, rc in ((["remove", "sglang", "--preview", "never", "--no-baseline", "--probe",
                           "raise SystemExit(1)"], 3),  # restored after a failed probe
                         (["rollback"], 0)):
            with self.subTest(args=args):
                if args == ["rollback"]:
                    self.assertEqual(self.venvtx("remove", "sglang", "--preview", "never", env=env).returncode, 0)
                calls = self.traced(*args, rc=rc, env=env)
                last_move = max(i for i, call in enumerate(calls) if self.moves_in_venv(call))
                flushed = next((i for i in range(last_move + 1, len(calls)) if self.index_flush(calls[i])), None)
                self.assertIsNotNone(flushed, "the index was never flushed after the files went back")
                if any(call[0] == "syncfs" and call[1] and self.in_venv(call[1][0])
                       for call in calls[last_move + 1:flushed]):
                    continue  # the whole filesystem
                put_back = [os.path.join(self.venv, "bin", "sglang")] + [
                    os.path.join(top, name) for package in ("sglang", "sglang-0.5.5.dist-info")
                    for top, _, files in os.walk(os.path.join(self.site, package)) for name in files]
                self.assertGreater(len(put_back), 5)
                self.flushed_after_placed(calls[:flushed], put_back + sorted({os.path.dirname(p) for p in put_back}))

    def test_a_package_switched_whole_is_flushed_with_the_files_it_kept(self):
        # One file of torch goes; its rollback switches torch whole, its other files linked into
        # the shadow: each directory of the shadow is on disk before it is switched in.
        torch = os.path.join(self.site, "torch")
        self.assertEqual(self.venvtx("run", "--", "rm", os.path.join(torch, "version.py")).returncode, 0)
        calls = self.traced("rollback")
        flushed = max(i for i, call in enumerate(calls) if self.index_flush(call))
        self.assertIn(torch, [self.renamed(call)[1] for call in calls if call[0] == "renameat2"],
                      "torch was not switched whole")
        dirs = [top for top, _, _ in os.walk(torch)]
        self.assertGreater(len(dirs), 3)
        self.flushed_after_placed(calls[:flushed], [os.path.join(torch, "version.py")] + dirs)

    @staticmethod
    def renamed(call):
        """(from, to) of a renameat/renameat2, each its directory's path joined with its name."""
        names = RENAME_AT.match(call[2]) if call[0] in ("renameat", "renameat2") else None
        return (os.path.join(names.group(1), names.group(2)), os.path.join(names.group(3), names.group(4))) \
            if names else None

    def flushed_after_placed(self, calls, paths):
        """Each of `paths` (files and directories of the test's own walk) flushed after the last
        rename that put it (a file) or an entry of it (a directory) in place: a package's shadow
        stands for the package it is exchanged or renamed with."""
        def switched_in(source):
            return os.path.basename(source).startswith(".venvtx-sw-")  # a shadow keeps its bytes

        shadows = dict(move for move in map(self.renamed, calls) if move and switched_in(move[0]))

        def live(path):
            for shadow, unit in shadows.items():
                if path == shadow or path.startswith(shadow + "/"):
                    return unit + path[len(shadow):]
            return path

        last_into, synced = {}, {}
        for i, call in enumerate(calls):
            move = self.renamed(call)
            if move:
                target = live(move[1])
                last_into[os.path.dirname(target)] = i
                if not switched_in(move[0]):
                    last_into[target] = i
            elif call[0] in ("fsync", "fdatasync") and call[1]:
                synced.setdefault(live(call[1][0]), []).append(i)
        for path in paths:
            self.assertTrue(any(i > last_into.get(path, -1) for i in synced.get(path, [])),
                            "%s was not flushed after it was put back (flushes: %s)"
                            % (path, sorted(p for p in synced if self.in_venv(p))))
