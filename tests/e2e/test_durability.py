"""Durability you can test (issue 24): kill -9 cannot show a missing flush (a killed process's
writes still reach the disk), so these read the order of flushes and renames from a syscall
trace (strace -y names each descriptor's path). The flushes that must come first, as
docs/design.md lists them: the index's WAL before the first venv file moves (the journal, with
synchronous=FULL), and syncfs of the venv after the files are put back and before the index
says where they are."""
import os
import re
import shutil
import subprocess

from support import VENVTX, VenvTestCase

CALL = re.compile(r"^\d+\s+(\w+)\((.*)\) = (-?\d+)")
PATH = re.compile(r"<([^>]*)>")


class FlushOrder(VenvTestCase):
    def setUp(self):
        super().setUp()
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        self.store = os.path.join(self.venv, ".venvtx")

    def traced(self, *args, rc=0, env=None):
        """(call, [paths of its descriptors]) for each write, flush and rename of `venvtx args`."""
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
                    calls.append((found.group(1), PATH.findall(found.group(2))))
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
                after = calls[last_move + 1:]
                synced = next((i for i, call in enumerate(after)
                               if call[0] == "syncfs" and call[1] and self.in_venv(call[1][0])), None)
                flushed = next((i for i, call in enumerate(after) if self.index_flush(call)), None)
                self.assertIsNotNone(synced, "no syncfs of the venv after the files went back: %s" % after)
                self.assertIsNotNone(flushed, "the index was never flushed after the files went back")
                self.assertLess(synced, flushed, "the index was flushed before the venv: %s" % after)
