"""`venvtx watch` (issue 38): each plain pip change recorded as its own entry once the venv is
quiet, every intermediate state restorable to the exact bytes; idle at no CPU and without the
locks; and the story's incident replayed with it running: the cu13 wheels uninstalled, two
reinstalled one by one, then `rollback --to` the stamp with `import torch` as the probe, offline,
the wheels deleted first. Real pip, real ELF loading; trees compared with the tests' own hashing."""
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

from support import VENVTX, PlainPip, VenvTestCase, tree_hash

CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]


class WatchCase(PlainPip, VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.wheels = os.path.join(self.tmp, "wheels")
        shutil.copytree(self.wheel_args[3], self.wheels)
        self.watcher = None

    def tearDown(self):
        if self.watcher and self.watcher.poll() is None:
            self.watcher.kill()
            self.watcher.wait()

    def start_watch(self):
        self.watcher = subprocess.Popen([VENVTX, "--venv", self.venv, "watch", "--quiet-for", "0.5"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        self.lines = []
        started = threading.Event()

        def read():
            for line in self.watcher.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith("watching "):
                    started.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not started.wait(20):
            self.watcher.kill()
            self.fail("watch did not start: %r" % self.watcher.stderr.read())

    def settle(self, seconds=3):
        time.sleep(seconds)  # the quiet period, then the record, with time to spare

    def stop_watch(self):
        self.watcher.send_signal(signal.SIGTERM)
        code = self.watcher.wait(timeout=20)
        self.assertEqual(code, 0, self.watcher.stderr.read())
        self.reader.join(timeout=5)  # its last line
        return self.lines

    def import_torch(self):
        return self.python("import torch").returncode == 0


class Watching(WatchCase):
    def test_three_plain_changes_are_three_entries_each_restorable(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        trees = {1: tree_hash(self.venv)}
        self.start_watch()
        for entry, change in ((2, lambda: self.pip("uninstall", "-q", "-y", "flash-attn")),
                              (3, lambda: self.pip("uninstall", "-q", "-y", "sglang")),
                              (4, lambda: self.pip_install("flash-attn"))):
            change()
            self.settle()
            trees[entry] = tree_hash(self.venv)
        lines = self.stop_watch()
        self.assertEqual([l for l in lines if l.startswith("entry ")],
                         ["entry 2: flash-attn 2.8.3 → ∅ (outside venvtx)",
                          "entry 3: sglang 0.5.5 → ∅ (outside venvtx)",
                          "entry 4: flash-attn ∅ → 2.8.3 (outside venvtx)"], lines)
        self.assertEqual(lines[-1], "stopped watching: 3 changes recorded")
        shutil.rmtree(self.wheels)
        for point in (3, 2, 1):  # down the history, one intermediate state after another
            proc = self.venvtx("rollback", "--to", str(point))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertTreeEqual(trees[point], tree_hash(self.venv))
        proc = self.venvtx("rollback", "--redo")  # undoes the last rollback: back at point 2
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(trees[2], tree_hash(self.venv))

    def test_idle_it_costs_no_cpu_and_holds_no_lock(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.start_watch()
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu_seconds():
            with open("/proc/%d/stat" % self.watcher.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        used, started = cpu_seconds(), time.monotonic()
        time.sleep(5)
        share = (cpu_seconds() - used) / (time.monotonic() - started)
        self.assertLess(share, 0.01, "watch used %.1f%% of a CPU idle" % (share * 100))
        # venvtx's own change goes through at once (the locks are free) and is not an outside entry
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.settle()
        lines = self.stop_watch()
        self.assertEqual(lines[-1], "stopped watching: 0 changes recorded", lines)
        kinds = [e["kind"] for e in self.venvtx_json("log")[1]]
        self.assertEqual(kinds, ["remove", "stamp"])

    def test_site_packages_gone_and_back_is_watched_again(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.start_watch()
        moved = self.site + ".away"
        os.rename(self.site, moved)
        time.sleep(1.5)
        os.rename(moved, self.site)
        self.settle()
        self.pip("uninstall", "-q", "-y", "sglang")
        self.settle()
        lines = self.stop_watch()
        # the venv without site-packages was a state too (recorded); the removal after, its own entry
        self.assertTrue(lines[-2].endswith(": sglang 0.5.5 → ∅ (outside venvtx)"), lines)


class TheIncidentReplayed(WatchCase):
    def test_whack_a_mole_then_one_rollback_to_the_working_venv(self):
        self.assertEqual(self.venvtx("stamp", "--comment", "working").returncode, 0)
        working = tree_hash(self.venv)
        self.start_watch()
        self.pip("uninstall", "-q", "-y", *CU13)  # the "clean-up"
        self.settle()
        self.assertFalse(self.import_torch())
        for name in ("nvidia-cudnn-cu13", "nvidia-nccl-cu13"):  # whack-a-mole, one library at a time
            self.pip_install(name)
            self.settle()
            self.assertFalse(self.import_torch())
        lines = self.stop_watch()
        entries = self.venvtx_json("log")[1]
        self.assertEqual([(e["id"], e["kind"]) for e in entries],
                         [(4, "outside"), (3, "outside"), (2, "outside"), (1, "stamp")], lines)
        self.assertEqual(sorted(p["name"] for p in entries[2]["packages"]), CU13)
        self.assertEqual([p["name"] for p in entries[1]["packages"]], ["nvidia-cudnn-cu13"])
        self.assertEqual([p["name"] for p in entries[0]["packages"]], ["nvidia-nccl-cu13"])
        shutil.rmtree(self.wheels)  # offline, and no wheel to reinstall from
        proc = self.venvtx("rollback", "--to", "1", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # Every file back to the byte but bytecode: the stamp's nvidia/*/__pycache__ was written by
        # an import, listed in no RECORD, so never held (docs/usage.md says so).
        def without_bytecode(tree):
            return {path: facts for path, facts in tree.items() if "__pycache__" not in path}
        self.assertTreeEqual(without_bytecode(working), without_bytecode(tree_hash(self.venv)))
        self.assertTrue(self.import_torch())


if __name__ == "__main__":
    unittest.main()
