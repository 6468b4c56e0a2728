"""The progress line, seen in a real terminal (tmux): drawn in place during a multi-second
capture, restore, probe and lock wait; never with --no-progress, -q, --json or a pipe."""
import base64
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
import unittest

from support import VENVTX, VenvTestCase

# "venvtx: capturing 1234/12000 paths (1.20 s)", "venvtx: probing `...` (2.00 s)"
PROGRESS = re.compile(r"venvtx: [a-z][^\n]* \(\d+\.\d\d s\)")
FILES = 12000


def write_installed_dist(site, name, count):
    """A distribution laid out as pip leaves it (files, RECORD with hashes, METADATA, INSTALLER),
    written directly: thousands of files in a second, where pip would take a minute."""
    records = []
    for i in range(count):
        rel = "%s/part%02d/module%05d.py" % (name, i % 50, i)
        path = os.path.join(site, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = (("value_%d = %d\n" % (i, i)) * 200).encode()
        with open(path, "wb") as out:
            out.write(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append("%s,sha256=%s,%d" % (rel, digest, len(data)))
    info = os.path.join(site, "%s-1.0.dist-info" % name)
    os.makedirs(info)
    texts = {"METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name, "INSTALLER": "pip\n",
             "WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    for leaf, text in texts.items():
        with open(os.path.join(info, leaf), "w") as out:
            out.write(text)
        records.append("%s-1.0.dist-info/%s,," % (name, leaf))
    records.append("%s-1.0.dist-info/RECORD,," % name)
    with open(os.path.join(info, "RECORD"), "w") as out:
        out.write("\n".join(records) + "\n")


@unittest.skipUnless(shutil.which("tmux"), "tmux not installed (scripts/setup.sh installs it)")
class ProgressInATerminal(VenvTestCase):
    def setUp(self):
        super().setUp()
        write_installed_dist(self.site, "bigdist", FILES)
        self.socket = "venvtx-progress-%d" % os.getpid()
        self.tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "40", "env -i PATH=/usr/bin:/bin bash --norc --noprofile")
        self.addCleanup(self.tmux, "kill-server")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t").stdout

    def type_and_watch(self, *args, shell_suffix="", timeout=120):
        """Types a venvtx command into the terminal; returns every progress line seen while it ran
        (the screen read every 50 ms), the final screen, and the exit status."""
        marker = "__done_%d__" % time.monotonic_ns()
        command = " ".join(shlex.quote(a) for a in [VENVTX, "--venv", self.venv, *args])
        self.tmux("send-keys", "-t", "t", "clear; %s%s; echo %s $?" % (command, shell_suffix, marker), "Enter")
        seen = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            screen = self.screen()
            done = re.search(re.escape(marker) + r" (\d+)", screen)
            for line in PROGRESS.findall(screen):
                if not seen or seen[-1] != line:
                    seen.append(line)
            if done:
                return seen, screen, int(done.group(1))
            time.sleep(0.05)
        self.fail("the command did not finish in %d s; screen:\n%s" % (timeout, self.screen()))

    def test_capture_and_restore_draw_one_line_in_place(self):
        # A removal's capture is renames only (its files are hashed later, by gc): enough of them
        # to last past the 0.3 s a phase runs before its line is drawn.
        write_installed_dist(self.site, "moredist", 3 * FILES)
        seen, screen, status = self.type_and_watch("remove", "bigdist", "moredist", "--preview", "never")
        self.assertEqual(status, 0, screen)
        self.assertIn("committed tx 1", screen)
        counted = [line for line in seen if re.search(r"venvtx: (capturing|indexing captured files) \d+/\d+ paths", line)]
        self.assertTrue(counted, "no capture progress seen: %r" % seen)
        # Overprinted and cleared: the finished screen holds results only, no progress line.
        self.assertFalse(PROGRESS.search(screen), screen)
        counts = [int(m.group(1)) for m in (re.search(r"capturing (\d+)/", line) for line in seen) if m]
        self.assertEqual(counts, sorted(counts), "capture counts go forward: %r" % seen)

        seen, screen, status = self.type_and_watch("rollback")
        self.assertEqual(status, 0, screen)
        self.assertTrue(any(re.search(r"venvtx: (applying|restoring|checking stored objects) \d+/\d+ paths", line)
                            for line in seen), "no restore progress seen: %r" % seen)
        self.assertFalse(PROGRESS.search(screen), screen)

    def test_a_probe_shows_its_code_and_elapsed_time(self):
        seen, screen, status = self.type_and_watch("probe", "--probe", "import time; time.sleep(2.5)")
        self.assertEqual(status, 0, screen)
        self.assertTrue(any("probing `import time; time.sleep(2.5)`" in line for line in seen), seen)

    def test_waiting_for_a_lock_is_shown(self):
        lock = open(os.path.join(self.venv, ".lock"), "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        releaser = threading.Timer(2.5, lambda: (fcntl.flock(lock, fcntl.LOCK_UN), lock.close()))
        releaser.start()
        self.addCleanup(releaser.cancel)
        seen, screen, status = self.type_and_watch("remove", "flashinfer-python", "--preview", "never", "--wait", "30")
        self.assertEqual(status, 0, screen)
        self.assertTrue(any("waiting for the lock on the venv" in line for line in seen), seen)

    def test_none_with_no_progress_quiet_json_or_a_pipe(self):
        # A 1.5 s probe: long enough for a line to be drawn (it shows from 0.3 s) had it been allowed.
        for extra, suffix in ((["--no-progress"], ""), (["-q"], ""), (["--json"], " >/dev/null"), ([], " 2>&1 | cat")):
            with self.subTest(extra=extra, suffix=suffix):
                seen, screen, status = self.type_and_watch(*extra, "probe", "--probe", "import time; time.sleep(1.5)",
                                                           shell_suffix=suffix)
                self.assertEqual(status, 0, screen)
                self.assertEqual(seen, [], "a progress line with %r%s" % (extra, suffix))


class ProgressOffATerminal(VenvTestCase):
    def test_a_pipe_gets_no_control_characters_and_v_gets_phase_timings(self):
        write_installed_dist(self.site, "bigdist", 2000)
        proc = self.venvtx("remove", "bigdist", "--preview", "never")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("\r", proc.stderr + proc.stdout)
        self.assertNotIn("\033", proc.stderr + proc.stdout)
        proc = self.venvtx("-v", "rollback")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        timings = re.findall(r"^venvtx: (applying|checking|committing)[^\n]*\((\d+\.\d\d) s\)$", proc.stderr, re.M)
        self.assertEqual({name for name, _ in timings}, {"applying", "checking", "committing"}, proc.stderr)
        self.assertNotIn("\r", proc.stderr)


if __name__ == "__main__":
    unittest.main()
