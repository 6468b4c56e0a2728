"""Two processes never interleave on one venv: the second waits (--wait SECONDS) or exits 5 at once
(contract invariant 5). venvtx locks its store and <venv>/.lock, the file uv locks. Real
processes throughout: a Python flock holder standing in for uv, and concurrent venvtx runs."""
import json
import os
import select
import subprocess
import sys
import time
import unittest

from support import VENVTX, VenvTestCase, tree_hash

HOLDER = r"""
import fcntl, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()  # released when the test writes a line or closes stdin
"""

PROBE_LOCK = r"""
import fcntl, sys
try:
    f = open(sys.argv[1], "r+")
except FileNotFoundError:
    sys.exit(0)
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(1)
"""

SLOW = "import time; time.sleep(3)"


def wait_until(predicate, what, timeout=20.0, while_running=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if while_running is not None and while_running.poll() is not None:
            out, err = while_running.communicate()
            raise AssertionError("process ended (exit %s) before %s: %s %s"
                                 % (while_running.returncode, what, out, err))
        time.sleep(0.05)
    raise AssertionError("timed out waiting until " + what)


class LockCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.children = []

    def tearDown(self):
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.wait()
            for pipe in (child.stdin, child.stdout, child.stderr):
                if pipe and not pipe.closed:
                    pipe.close()

    def spawn(self, argv, **kwargs):
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.tmp, **kwargs)
        self.children.append(child)
        return child

    def spawn_venvtx(self, *args):
        return self.spawn([VENVTX, "--venv", self.venv, *args])

    def hold(self, path):
        """A separate process holding flock(LOCK_EX) on path until release(holder)."""
        holder = self.spawn([sys.executable, "-c", HOLDER, path])
        ready, _, _ = select.select([holder.stdout], [], [], 60)
        self.assertTrue(ready, "lock holder did not report in time")
        line = holder.stdout.readline()
        self.assertEqual(line.strip(), "held", holder.stderr.read() if not line else line)
        return holder

    def release(self, holder):
        holder.stdin.close()
        holder.wait(timeout=10)

    def finish(self, child, timeout=60):
        out, err = child.communicate(timeout=timeout)
        return subprocess.CompletedProcess(child.args, child.returncode, out, err)

    def lock_is_held(self, path):
        """Asked from another process, without blocking (and held only for an instant)."""
        return subprocess.run([sys.executable, "-c", PROBE_LOCK, path]).returncode == 1

    def store_lock(self):
        return os.path.join(self.venv, ".venvtx", "lock")

    def venv_lock(self):
        return os.path.join(self.venv, ".lock")

    def has_open(self, pid, path):
        """Whether process pid has path open: a venvtx waiting in --wait holds its lock file open."""
        target = os.path.realpath(path)
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except FileNotFoundError:
            return False
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == target:
                    return True
            except OSError:
                pass
        return False

    def start_slow_remove(self, pattern, probe=SLOW):
        # --wait: our own lock poll could hold the lock for an instant just as this one starts.
        # In place (--preview never): the venv is half-changed while the probe runs.
        child = self.spawn_venvtx("remove", pattern, "--preview", "never", "--no-baseline", "--probe", probe,
                                  "--wait", "10")
        wait_until(lambda: self.lock_is_held(self.store_lock()), "the slow remove holds the store lock",
                   while_running=child)
        return child

    def log(self):
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return log

    def installed(self, prefix):
        return any(d.startswith(prefix) and d.endswith(".dist-info") for d in os.listdir(self.site))

    def assertLockedError(self, proc, started):
        self.assertOneLineError(proc, 5)
        self.assertIn("locked", proc.stderr)
        self.assertLess(time.monotonic() - started, 10, "exit 5 should come at once, not after a wait")


class ForeignHolderOfVenvLock(LockCase):
    """Something else (uv) holds <venv>/.lock."""

    def test_mutation_exits_5_at_once_and_changes_nothing(self):
        before = tree_hash(self.venv)
        holder = self.hold(self.venv_lock())
        for args in (("remove", "sglang"), ("rollback",), ("recover",)):
            with self.subTest(args=args):
                started = time.monotonic()
                proc = self.venvtx(*args)
                self.assertLockedError(proc, started)
                self.assertIn(".lock", proc.stderr)
        proc, doc = self.venvtx_json("remove", "sglang")
        self.assertEqual(proc.returncode, 5)
        self.assertEqual(doc["error"]["exit_code"], 5)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.release(holder)
        self.assertEqual([t for t in self.log() if t["state"] == "committed"], [])

    def test_wait_succeeds_once_the_holder_lets_go(self):
        holder = self.hold(self.venv_lock())
        started = time.monotonic()
        child = self.spawn_venvtx("remove", "sglang", "--wait", "10")
        time.sleep(1.5)  # the point of this test: it is still waiting after 1.5 s
        if child.poll() is not None:
            self.fail("remove --wait did not wait: exit %s %s %s" % (child.returncode, *child.communicate()))
        self.assertTrue(self.installed("sglang-"))
        self.release(holder)
        proc = self.finish(child, timeout=30)
        elapsed = time.monotonic() - started
        self.assertEqual(proc.returncode, 0, "after %.1f s: %s%s" % (elapsed, proc.stdout, proc.stderr))
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertFalse(self.installed("sglang-"))
        self.assertEqual([(t["kind"], t["state"]) for t in self.log()], [("remove", "committed")])

    def test_wait_gives_up_with_exit_5(self):
        before = tree_hash(self.venv)
        holder = self.hold(self.venv_lock())
        started = time.monotonic()
        proc = self.venvtx("remove", "sglang", "--wait", "1")
        elapsed = time.monotonic() - started
        self.assertOneLineError(proc, 5)
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 10)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.release(holder)

    def test_read_only_commands_work_while_locked(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        holder = self.hold(self.venv_lock())
        store_holder = self.hold(self.store_lock())
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([(t["id"], t["state"]) for t in log], [(1, "committed")])
        proc, shown = self.venvtx_json("show", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(shown["id"], 1)
        self.assertEqual(self.venvtx("log").returncode, 0)
        self.assertEqual(self.venvtx("show", "1").returncode, 0)
        self.release(store_holder)
        self.release(holder)


class TwoVenvtx(LockCase):
    def test_second_exits_5_then_waits_its_turn(self):
        slow = self.start_slow_remove("sglang")
        started = time.monotonic()
        proc = self.venvtx("remove", "flash-attn")
        self.assertLockedError(proc, started)
        self.assertTrue(self.installed("flash_attn-"))
        # Read-only commands while a mutation runs.
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.venvtx("log").returncode, 0)
        first = self.finish(slow)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        log = self.log()
        self.assertEqual([(t["id"], t["kind"], t["state"]) for t in log], [(1, "remove", "committed")])
        self.assertEqual([p["name"] for p in log[0]["packages"]], ["sglang"])
        self.assertEqual(self.venvtx("show", "1").returncode, 0)

        # Now one that waits: it starts while another slow remove runs, and goes after it.
        slow = self.start_slow_remove("flashinfer-python")
        waiting = self.spawn_venvtx("remove", "flash-attn", "--wait", "30")
        wait_until(lambda: self.has_open(waiting.pid, self.venv_lock()), "the second is waiting for the lock",
                   while_running=waiting)
        self.assertIsNone(slow.poll(), "the slow remove ended before the second one was waiting")
        self.assertTrue(self.installed("flash_attn-"), "the second remove did not wait")
        first = self.finish(slow)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        second = self.finish(waiting)
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        self.assertFalse(self.installed("flash_attn-"))
        self.assertFalse(self.installed("flashinfer_python-"))
        log = self.log()
        self.assertEqual([(t["id"], t["state"]) for t in log], [(3, "committed"), (2, "committed"),
                                                                (1, "committed")])
        by_id = {t["id"]: t for t in log}
        self.assertEqual([p["name"] for p in by_id[2]["packages"]], ["flashinfer-python"])
        self.assertEqual([p["name"] for p in by_id[3]["packages"]], ["flash-attn"])
        for earlier, later in ((1, 2), (2, 3)):
            self.assertLessEqual(by_id[earlier]["started_at"], by_id[earlier]["finished_at"])
            self.assertLessEqual(by_id[earlier]["finished_at"], by_id[later]["started_at"],
                                 "transactions %d and %d overlap" % (earlier, later))
        self.assertEqual(self.venvtx("verify").returncode, 0)

    def test_read_only_commands_during_a_mutation(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        slow = self.start_slow_remove("sglang")
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn((1, "committed"), [(t["id"], t["state"]) for t in log])
        proc, shown = self.venvtx_json("show", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([p["name"] for p in shown["packages"]], ["flash-attn"])
        self.assertIsNone(slow.poll(), "the slow remove ended before the read-only commands ran")
        self.assertEqual(self.finish(slow).returncode, 0)


class PlanTakenUnderTheLock(LockCase):
    """What a mutation removes must be decided while it holds the locks. A plan made before
    taking them describes a venv another process may be changing, or change while we wait."""

    def test_stale_plan_after_wait(self):
        """uv removes sglang while holding <venv>/.lock; a `remove sglang --wait` that was waiting
        must look at the venv as it is once it gets the lock: nothing matches any more (already
        gone: exit 0, said), nothing changes, and the store stays usable."""
        holder = self.hold(self.venv_lock())
        child = self.spawn_venvtx("remove", "sglang", "--wait", "30")
        wait_until(lambda: self.has_open(child.pid, self.venv_lock()), "remove is waiting for the lock",
                   while_running=child)
        # While the lock is held (as uv holds it during `uv pip uninstall`), sglang goes away.
        pip = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "uninstall", "-y",
                              "--no-input", "sglang"], capture_output=True, text=True, env=self.env)
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        self.assertFalse(self.installed("sglang-"))
        before = tree_hash(self.venv)
        self.release(holder)
        proc = self.finish(child)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("skipping 'sglang'", proc.stderr)
        self.assertIn("nothing to remove", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual([t for t in self.log() if t["state"] != "aborted"], [])
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, "store unusable afterwards: " + proc.stdout + proc.stderr)

    def test_same_removal_twice_concurrently(self):
        """Both plan, both wait on uv's lock; exactly one removes sglang, the other finds nothing
        left to remove (already gone: exit 0) -- never a crash, a stuck transaction or a damaged venv."""
        holder = self.hold(self.venv_lock())
        children = [self.spawn_venvtx("remove", "sglang", "--wait", "30") for _ in range(2)]
        for child in children:
            wait_until(lambda: self.has_open(child.pid, self.venv_lock()), "both are waiting",
                       while_running=child)
        self.release(holder)
        results = [self.finish(child) for child in children]
        codes = sorted(r.returncode for r in results)
        self.assertEqual(codes, [0, 0], "\n".join(r.stdout + r.stderr for r in results))
        self.assertEqual(sorted("nothing to remove" in r.stdout for r in results), [False, True],
                         "\n".join(r.stdout + r.stderr for r in results))
        self.assertEqual([(t["kind"], t["state"]) for t in self.log() if t["state"] != "aborted"],
                         [("remove", "committed")])
        self.assertFalse(os.path.exists(os.path.join(self.site, "sglang")))
        self.assertEqual(self.venvtx("verify").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(self.python("import sglang").returncode, 0)

    def test_second_sees_the_first_only_after_it_finishes(self):
        """A remove whose probe fails restores sglang; a `remove sglang --wait` started during
        that probe must wait for the restore and then remove it -- not report 'no installed
        distribution matches' from the half-done venv it read without the lock."""
        slow = self.start_slow_remove("sglang", probe="import time; time.sleep(3); raise SystemExit(1)")
        waiting = self.spawn_venvtx("remove", "sglang", "--wait", "30")
        first = self.finish(slow)
        self.assertEqual(first.returncode, 3, first.stdout + first.stderr)
        second = self.finish(waiting)
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        self.assertEqual([(t["id"], t["state"]) for t in self.log()], [(2, "committed"), (1, "rolled_back")])

    def test_second_without_wait_exits_5_not_2(self):
        slow = self.start_slow_remove("sglang")
        started = time.monotonic()
        proc = self.venvtx("remove", "sglang")
        self.assertLockedError(proc, started)
        self.assertEqual(self.finish(slow).returncode, 0)


if __name__ == "__main__":
    unittest.main()
