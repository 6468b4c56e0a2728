"""kill -9 at every mutating step, then `venvtx recover`: the venv is exactly the before- or
the after-state, the index is intact and says which (issue 3, Done when 1 and 2)."""
import os
import shutil
import sqlite3
import subprocess
import sys
import unittest
import zlib

from support import ExternalStoreMixin, VenvTestCase, story_template, tree_hash

KILLED = -9
# CI kills at every step up to 10, then at every twenty-fourth one, each sweep at its own residue (so
# the sweeps together cover every residue: a deterministic sample that still hits every stretch
# of each sweep, and keeps the crash sweeps near ten of `bash tests/run.sh`'s 25 minutes on 2 cores);
# VENVTX_FULL_SWEEPS=1 kills at every single step.
FULL = os.environ.get("VENVTX_FULL_SWEEPS") == "1"


def sampled(point, every=3, also=(), offset=0):
    return FULL or point <= 10 or point % every == offset % every or point in also


class SweepCase(VenvTestCase):
    """Helpers shared by the sweeps: template venvs, fresh copies, the index's verdict."""

    def prepare(self, *setup):
        """A template venv (with its store) after `setup` commands; returns its path."""
        for args in setup:
            self.assertEqual(self.venvtx(*args).returncode, 0)
        template = os.path.join(self.tmp, "template")
        os.rename(self.venv, template)
        return template

    def fresh(self, template):
        shutil.rmtree(self.venv, ignore_errors=True)
        subprocess.run(["cp", "-a", template, self.venv], check=True)

    # Where the store lives (ExternalStoreSweep moves it to another filesystem), how sparsely
    # its sweeps sample past the tenth step, and whether the template came with a history.
    SAMPLE_EVERY = 24
    SAMPLE_ALSO = ()  # steps always tried: where a sweep once found a fault

    def sample_offset(self):
        """Which residue this sweep samples: from its name, so it is the same on every run."""
        return zlib.crc32(self.id().encode())

    def store_dir(self):
        return os.path.join(self.venv, ".venvtx")

    def template_has_history(self, template):
        return os.path.exists(os.path.join(template, ".venvtx"))

    def sweep(self, template, args, expected_rc, after_ok_state, verify_after=False, undo_after=False):
        """`verify_after`: after each recovery `verify` must also say what it says of the same
        state reached without a kill (every object an older transaction needs still there: a
        lost object shows only later; a file a command edited differs from RECORD either way).
        `undo_after`: a recovery that completed the command leaves it undoable: `rollback`
        brings the venv back to before it (its pre-images were journaled, not only stored)."""
        self.fresh(template)
        before = tree_hash(self.venv)
        verified = {"before": self.verify_problems()}
        proc = self.venvtx(*args)
        self.assertEqual(proc.returncode, expected_rc, proc.stdout + proc.stderr)
        after = tree_hash(self.venv)
        verified["after"] = self.verify_problems()
        if undo_after:
            self.assertTrue(self.undoes_to(before), "the command's rollback, with no kill, is not exact")
        untouched_state = "committed" if self.template_has_history(template) else None
        points = 0
        tried = 0
        mismatches = []
        while True:
            points += 1
            if not sampled(points, self.SAMPLE_EVERY, self.SAMPLE_ALSO, self.sample_offset()):
                continue
            self.fresh(template)
            env = dict(self.env, VENVTX_FAILPOINT=str(points))
            proc = self.venvtx(*args, env=env)
            if proc.returncode != KILLED:
                self.assertEqual(proc.returncode, expected_rc, proc.stdout + proc.stderr)
                points -= 1
                break
            tried += 1
            recovered = self.venvtx("recover")
            self.assertEqual(recovered.returncode, 0, recovered.stdout + recovered.stderr)
            self.assertNoPreviewLeft()
            tree = tree_hash(self.venv)
            if verify_after and tree in (before, after):
                problems = self.verify_problems()
                if problems != verified["before" if tree == before else "after"]:
                    mismatches.append((points, "verify", problems))
                    continue
            state = self.final_state()
            said = recovered.stdout + recovered.stderr
            # The verdict is the tree's: "NOT restored" only for a venv that is not as before.
            if ("NOT restored" in said) == (tree == before) and "recovered interrupted" in said:
                mismatches.append((points, "recover said: " + said.strip()[-200:]))
                continue
            # Before-state: the new transaction was rolled back, or aborted with nothing applied
            # (a failed preview), or never journaled (then the newest row is the setup's
            # committed one, or there is none).
            if tree == before and state in ("rolled_back", "aborted", untouched_state):
                continue
            if tree == after and state == after_ok_state:
                if undo_after and not self.undoes_to(before):
                    mismatches.append((points, "its rollback after the recovery is not exact"))
                continue
            mismatches.append((points, state, tree == before, tree == after))
        print("\n  %s: %d of %d failpoints tried, %d mismatches" % (" ".join(args), tried, points, len(mismatches)))
        self.assertGreater(points, 10)
        self.assertEqual(mismatches, [])


    def undoes_to(self, before):
        """Whether `rollback` of the newest transaction brings the venv to `before` exactly."""
        return self.venvtx("rollback").returncode == 0 and tree_hash(self.venv) == before

    def verify_problems(self):
        """What `venvtx verify` finds wrong, one line each (its closing count left out)."""
        proc = self.venvtx("verify")
        return sorted(line for line in proc.stdout.splitlines()
                      if line and not line.startswith(("ok:", "PROBLEMS:")))

    def assertNoPreviewLeft(self):
        """After `recover`: no preview layer in the store, no overlay of the venv mounted here."""
        self.assertFalse(os.path.exists(os.path.join(self.store_dir(), "preview")))
        with open("/proc/self/mountinfo") as mounts:
            self.assertNotIn(self.venv, mounts.read())

    def final_state(self):
        """The newest transaction's state, or None where no index was ever written."""
        if not os.path.exists(os.path.join(self.store_dir(), "index.sqlite")):
            return None
        with sqlite3.connect(os.path.join(self.store_dir(), "index.sqlite")) as db:
            row = db.execute("SELECT state FROM transactions ORDER BY id DESC LIMIT 1").fetchone()
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        return row[0] if row else None


class FailpointSweep(SweepCase):
    """In place (--preview never): the change reaches the live venv before its probe."""

    def test_multi_package_remove(self):
        template = self.prepare()
        self.sweep(template, ["remove", "sglang", "flash*", "--preview", "never", "--no-baseline", "--probe",
                              "import torch"], 0, "committed", verify_after=True)

    def test_remove_whose_probe_fails(self):
        template = self.prepare()
        # verify_after: the removal's unhashed captures that went back leave no row behind
        self.sweep(template, ["remove", "nvidia-*-cu13", "--preview", "never", "--no-baseline", "--probe",
                              "import torch"], 3, "rolled_back", verify_after=True)

    def test_rollback(self):
        template = self.prepare(["remove", "sglang", "flashinfer-python"])
        self.sweep(template, ["rollback"], 0, "committed", verify_after=True)

    def test_redo_after_a_zero_copy_rollback(self):
        # The rollback put the run's pre-images back by rename; the redo moves the run's result
        # out of the store into place, then back if it is killed.
        # Every step (about 60, each a few tens of ms in memory): the steps between the capture's
        # adopt and its journal are few, and a sample misses them.
        template = self.prepare(["run", "--preview", "never", "--", "sh", "-c", CommandSweep.RUN], ["rollback"])
        self.SAMPLE_EVERY = 1
        self.sweep(template, ["rollback", "--redo"], 0, "committed", verify_after=True, undo_after=True)


class HistorySweep(SweepCase):
    """Rollbacks that issue 25 made one transaction: --to N over several, and one older
    transaction alone."""
    SETUP = (["remove", "sglang"], ["remove", "flash-attn", "--preview", "never"],
             ["remove", "flashinfer-python", "--preview", "never"])

    def test_rollback_to_one_transaction(self):
        template = self.prepare(*self.SETUP)
        self.sweep(template, ["rollback", "--to", "1", "--no-baseline", "--probe", "import torch"], 0, "committed",
                   verify_after=True)

    def test_rollback_of_an_older_transaction_alone(self):
        template = self.prepare(*self.SETUP)
        self.sweep(template, ["rollback", "2"], 0, "committed", verify_after=True)


class OutsideRollbackSweep(SweepCase):
    """A rollback of a plain `pip uninstall`, from the files the stamp before it held (issue 38):
    killed at every sixth step past the tenth (every step with VENVTX_FULL_SWEEPS=1), then I/O
    errors injected; recovered, the venv is as pip left it or as before pip, never a third state."""
    SAMPLE_EVERY = 6

    def outside_removal(self):
        template = self.prepare(["stamp"])
        # pip from outside the venv (prepare() dropped the venv's own), as plain as a user's
        pip = subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(template, "bin", "python"),
                              "uninstall", "-q", "-y", "flash-attn", "nvidia-nccl-cu13"],
                             capture_output=True, text=True, env=dict(self.env, PIP_CONFIG_FILE=os.devnull))
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        return template

    def template_has_history(self, template):
        return False  # the newest entry of an untouched copy is the outside one (final_state: None)

    def final_state(self):
        state = super().final_state()
        return None if state == "recorded" else state

    def test_kills(self):
        self.sweep(self.outside_removal(), ["rollback"], 0, "committed")

    def test_enospc_and_eio(self):
        InjectedIoErrors.fault_sweep(self, self.outside_removal(), ["rollback"], ("ENOSPC", "EIO:persist"), every=6)


class HoldSweep(SweepCase):
    """The first hold of a venv (issue 38), killed before its k-th link (VENVTX_HOLD_FAILPOINT)
    or failed there by ENOSPC or a persistent EIO (VENVTX_HOLD_FAULT), sampled as the other sweeps
    are. After it: the index is intact; the next venvtx command holds what the cut-short one did
    not, so a plain pip uninstall then is undone to the exact bytes; and a plain uninstall made
    before any other venvtx command is either undone exactly or refused with the venv as pip left
    it, never put back wrong."""
    SAMPLE_EVERY = 30

    def setUp(self):
        super().setUp()
        self.template = self.prepare()
        self.fresh(self.template)
        stamp = self.venvtx("-v", "stamp")
        self.assertEqual(stamp.returncode, 0, stamp.stderr)
        self.links = int(stamp.stderr.split("venvtx: held ")[1].split()[0])
        self.assertGreater(self.links, 30)

    def plain_uninstall(self):
        pip = subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(self.venv, "bin", "python"),
                              "uninstall", "-q", "-y", "flash-attn", "nvidia-nccl-cu13"],
                             capture_output=True, text=True, env=dict(self.env, PIP_CONFIG_FILE=os.devnull))
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)

    def after_cut(self, point, env, expected_rc, mismatches):
        """Both continuations of a hold cut at `point`; each mismatch appended."""
        for settle in (True, False):
            self.fresh(self.template)
            before = tree_hash(self.venv)
            cut = self.venvtx("stamp", env=dict(self.env, **env))
            if cut.returncode != expected_rc:
                mismatches.append((point, settle, "stamp exit %d" % cut.returncode, cut.stderr[-300:]))
                continue
            self.final_state()  # the index's integrity
            if settle:
                self.assertEqual(self.venvtx("log").returncode, 0)  # any command that records holds
            self.plain_uninstall()
            removed = tree_hash(self.venv)
            undo = self.venvtx("rollback", "--no-probe")
            tree = tree_hash(self.venv)
            exact = undo.returncode == 0 and tree == before
            refused = not settle and undo.returncode == 2 and tree == removed
            if not (exact or refused):
                mismatches.append((point, settle, undo.returncode, tree == before, tree == removed,
                                   (undo.stdout + undo.stderr)[-300:]))

    def points(self):
        return [k for k in range(1, self.links + 1) if sampled(k, self.SAMPLE_EVERY, (self.links,),
                                                                self.sample_offset())]

    def test_kills(self):
        mismatches = []
        points = self.points()
        for point in points:
            self.after_cut(point, {"VENVTX_HOLD_FAILPOINT": str(point)}, KILLED, mismatches)
        print("\n  first hold killed at %d of %d links, %d mismatches" % (len(points), self.links, len(mismatches)))
        self.assertEqual(mismatches, [])

    def test_enospc_and_eio(self):
        mismatches = []
        points = self.points()
        for n, point in enumerate(points):
            kind = ("ENOSPC", "EIO:persist")[n % 2]
            self.after_cut(point, {"VENVTX_HOLD_FAULT": "%d:%s" % (point, kind)}, 0, mismatches)
        print("\n  first hold failed at %d of %d links, %d mismatches" % (len(points), self.links, len(mismatches)))
        self.assertEqual(mismatches, [])


class CommandSweep(SweepCase):
    """Around an external command (install and run share the code): touch capture (the
    default) at sampled steps; link capture at sampled steps of a run and of a pip
    install, whose every venv file it links."""

    RUN = ("cd \"$VIRTUAL_ENV\" && site=$(echo lib/python3*/site-packages) && "
           "rm $site/flash_attn/ops/__init__.py && rm bin/sglang && echo new > bin/sglang && "
           "mkdir $site/newpkg && echo 'x = 1' > $site/newpkg/__init__.py && "
           "echo '# edited' >> $site/sglang/__init__.py")

    def run_args(self, *capture):
        return ["run", *capture, "--preview", "never", "--no-baseline", "--probe", "import torch", "--", "sh", "-c",
                self.RUN]

    def test_run_every_step(self):
        self.sweep(self.prepare(), self.run_args(), 0, "committed")

    def test_run_every_step_link_capture(self):
        self.sweep(self.prepare(), self.run_args("--capture", "link", "--copy"), 0, "committed")

    def pip_install(self, *capture):
        """A real pip upgrade of torch in a venv that keeps its pip; returns (template, args)."""
        template = os.path.join(self.tmp, "template")
        os.rename(self.venv, template)
        wheels = story_template()
        self.env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
        # --no-compile: bytecode embeds its source's mtime, so two clean runs would differ.
        preview = [] if "--preview" in capture else ["--preview", "never"]
        return template, ["install", *capture, *preview, "--installer", "pip", "--no-baseline", "--probe", "import sglang",
                          "torch==2.12.0", "--", "-q", "--no-compile", "--no-index", "--find-links",
                          os.path.join(wheels, "wheels"), "--find-links", os.path.join(wheels, "wheels-extra")]

    def test_pip_install_every_step(self):
        template, args = self.pip_install()
        self.sweep(template, args, 0, "committed")

    def test_pip_install_link_capture_sampled_steps(self):
        template, args = self.pip_install("--capture", "link")
        self.fresh(template)
        before = tree_hash(self.venv)
        self.assertEqual(self.venvtx(*args).returncode, 0)
        after = tree_hash(self.venv)
        steps = InjectedIoErrors.count_steps(self, template, args)
        points = sorted(set(list(range(1, 6)) + list(range(1, steps + 1, max(steps // 25, 1))) +
                            list(range(max(steps - 5, 1), steps + 1))))
        for point in points:
            self.fresh(template)
            proc = self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, KILLED, "step %d of %d" % (point, steps))
            self.assertEqual(self.venvtx("recover").returncode, 0)
            tree = tree_hash(self.venv)
            state = self.final_state()
            ok = (tree == before and state in ("rolled_back", None)) or (tree == after and state == "committed")
            self.assertTrue(ok, "kill at step %d of %d left state %s, before=%s after=%s"
                            % (point, steps, state, tree == before, tree == after))
        print("\n  pip install, link capture: %d of %d failpoints tried, 0 mismatches" % (len(points), steps))


class ExternalStoreSweep(ExternalStoreMixin, SweepCase):
    """The same kills with the store on another filesystem (a tmpfs this test mounts): every
    pre-image crosses filesystems as a copy, and recovery must be as exact as on the default
    store. Sampled every twenty-fourth step past the tenth (VENVTX_FULL_SWEEPS=1: every step)."""

    SAMPLE_EVERY = 24
    STORE_FILESYSTEM_SIZE = "512m"

    def store_dir(self):
        return self.store

    def template_has_history(self, template):
        return os.path.exists(self.store + "-template")

    def prepare(self, *setup):
        template = super().prepare(*setup)
        if os.path.exists(self.store):
            os.rename(self.store, self.store + "-template")
        return template

    def fresh(self, template):
        super().fresh(template)
        shutil.rmtree(self.store, ignore_errors=True)
        if self.template_has_history(template):
            subprocess.run(["cp", "-a", self.store + "-template", self.store], check=True)

    def test_multi_package_remove(self):
        self.sweep(self.prepare(), ["remove", "sglang", "flash*", "--preview", "never", "--no-baseline", "--probe",
                                    "import torch"], 0, "committed", verify_after=True)

    def test_rollback(self):
        self.sweep(self.prepare(["remove", "sglang", "flashinfer-python"]), ["rollback"], 0, "committed",
                   verify_after=True)

    RUN = CommandSweep.RUN

    def test_run_in_place(self):
        self.sweep(self.prepare(), CommandSweep.run_args(self), 0, "committed")

    def test_enospc_and_eio_during_a_remove(self):
        InjectedIoErrors.fault_sweep(self, self.prepare(), ["remove", "sglang", "flash*", "--preview", "never",
                                                            "--no-baseline", "--probe", "import torch"],
                                     ("ENOSPC", "EIO:persist"), every=4)

    # CommandSweep's pip upgrade of torch, in place under touch capture: a pip run a step, so
    # every tenth past the tenth.

    def test_pip_install_in_place(self):
        template, args = CommandSweep.pip_install(self)
        self.SAMPLE_EVERY = 10
        self.sweep(template, args, 0, "committed")

    def test_enospc_and_eio_during_a_watched_install(self):
        template, args = CommandSweep.pip_install(self)
        InjectedIoErrors.fault_sweep(self, template, args, ("ENOSPC", "EIO:persist"), every=10)


class InjectedIoErrors(SweepCase):
    @staticmethod
    def count_steps(self, template, args):
        """The number of mutating steps of `args`, as one clean run tallies them
        (VENVTX_FAILPOINT_TALLY), checked against the failpoint itself: FAILPOINT=N kills
        exactly when N <= steps (the last step kills, the one after it does not)."""
        tally = os.path.join(self.tmp, "tally")
        self.fresh(template)
        run = self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT_TALLY=tally))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        with open(tally) as file:
            steps = int(file.read())
        os.unlink(tally)
        self.assertTrue(steps == 0 or InjectedIoErrors.killed_at(self, template, args, steps), "step %d" % steps)
        self.assertFalse(InjectedIoErrors.killed_at(self, template, args, steps + 1), "step %d" % (steps + 1))
        return steps

    @staticmethod
    def killed_at(self, template, args, step):
        self.fresh(template)
        return self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT=str(step))).returncode == KILLED

    def fault_sweep(self, template, args, kinds, every=4, staggered=False):
        """Each of `kinds` injected at the steps of `args` `sampled` with `every` (every step with
        VENVTX_FULL_SWEEPS=1): a clear error (the last line of stderr: an installer speaks before it) and the
        venv restored, or recoverable. `staggered`: past the first ten steps the kinds take turns, so
        together they reach every (every / len(kinds))-th step at the cost of one kind."""
        self.fresh(template)
        before = tree_hash(self.venv)
        self.assertEqual(self.venvtx(*args).returncode, 0)
        after = tree_hash(self.venv)
        steps = InjectedIoErrors.count_steps(self, template, args)
        self.assertGreater(steps, 10)
        tried = 0
        for turn, kind in enumerate(kinds):
            offset = turn * every // len(kinds) if staggered else 0
            for step in (step for step in range(1, steps + 1) if sampled(step, every, offset=offset)):
                self.fresh(template)
                proc = self.venvtx(*args, env=dict(self.env, VENVTX_FAULT="%d:%s" % (step, kind)))
                tried += 1
                where = "%s at step %d of %d" % (kind, step, steps)
                self.assertIn(proc.returncode, (0, 1), where + ": " + proc.stdout + proc.stderr)
                if proc.returncode == 1:
                    message = proc.stderr.strip().splitlines()[-1]
                    if args[0] != "install":
                        self.assertNotIn("\n", proc.stderr.strip(), where)
                    self.assertRegex(message, "^venvtx: .*(No space left on device|Input/output error)", where)
                if self.final_state() in ("started", "applied", "interrupted"):
                    recovered = self.venvtx("recover")
                    self.assertEqual(recovered.returncode, 0, where + ": " + recovered.stderr)
                tree = tree_hash(self.venv)
                self.assertIn(tree, (before, after), where + " left a third state")
                self.assertIn(self.final_state(), ("committed",) if tree == after else ("rolled_back", "aborted", None), where)
        print("\n  %s: injected I/O errors at %d points (of %d steps x %d kinds): all restored or recoverable"
              % (args[0], tried, steps, len(kinds)))

    def test_enospc_and_eio_once_and_persistent(self):
        template = self.prepare()
        args = ["remove", "sglang", "flash*", "--no-baseline", "--probe", "import torch"]
        self.fault_sweep(template, args, ("ENOSPC", "EIO", "ENOSPC:persist", "EIO:persist"))

    def test_enospc_and_eio_during_a_watched_install(self):
        template, args = CommandSweep.pip_install(self)
        self.fault_sweep(template, args, ("ENOSPC", "EIO:persist"), every=4)  # a pip run a step

    def test_fault_during_recovery_itself(self):
        template = self.prepare()
        args = ["remove", "sglang", "flash*"]
        self.fresh(template)
        before = tree_hash(self.venv)
        middle = InjectedIoErrors.count_steps(self, template, args) // 2
        self.fresh(template)
        killed = self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT=str(middle)))
        self.assertEqual(killed.returncode, KILLED)
        failed = self.venvtx("recover", env=dict(self.env, VENVTX_FAULT="3:EIO"))
        self.assertEqual(failed.returncode, 1, failed.stdout + failed.stderr)
        self.assertIn("Input/output error", failed.stderr)
        ok = self.venvtx("recover")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.final_state(), "rolled_back")


if __name__ == "__main__":
    unittest.main()
