"""`venvtx guard on|off|status` (issue 38): in a guarded venv, plain pip (pip, pip3, pip3.X,
python -m pip, the venv's bin/pip by path) and `uv pip` run as venvtx transactions with the
saved probe, so a plain `pip uninstall -y` that breaks `import torch` exits 3 with the venv
unchanged; VENVTX_GUARD=0 bypasses it once; pip upgrades itself under it; `guard off` leaves the
exact pre-guard tree. Real pip, real ELF loading; trees compared with the tests' own hashing."""
import glob
import os
import pty
import shutil
import subprocess
import sys
import unittest

from support import VENVTX, VenvTestCase, own_scripts, tree_hash

# A stand-in for uv (no uv on these machines): it logs how it was called, and does what
# `uv pip ...` would to $VIRTUAL_ENV with that venv's pip, but only when venvtx started it.
STAND_IN_UV = """#!/bin/sh
echo "${VENVTX_GUARD:-unset} $*" >> "$UV_LOG"
if [ "$1" = pip ] && [ "${VENVTX_GUARD:-}" = 0 ]; then
    shift
    [ "$1" = sync ] && exit 0
    exec "$VIRTUAL_ENV/bin/python" -m pip "$@"
fi
"""


class Guarded(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.put_pip_inside()  # pip as a user types it: in the venv, upgrading itself
        own_scripts(self.venv)
        self.wheels = self.wheel_args[3]
        self.bin = os.path.join(self.venv, "bin")
        self.active = dict(self.env, VIRTUAL_ENV=self.venv, PATH=self.bin + ":" + self.env["PATH"])

    def guard(self, action, env=None):
        proc, document = self.venvtx_json("guard", action, env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return document

    def shell(self, line, env=None, code=0):
        """`line` as typed in a shell with the venv activated."""
        proc = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env or self.active,
                              cwd=self.tmp, stdin=subprocess.DEVNULL, timeout=300)
        self.assertEqual(proc.returncode, code, "%s: %s%s" % (line, proc.stdout, proc.stderr))
        return proc

    def kinds(self):
        return [(tx["kind"], tx["state"]) for tx in self.venvtx_json("log")[1]]

    def versions(self):
        proc = self.shell("VENVTX_GUARD=0 pip list --format=freeze")
        return dict(line.split("==") for line in proc.stdout.split())


class GuardCatchesPlainPip(Guarded):
    def test_a_plain_uninstall_that_breaks_the_probe_exits_3_and_guard_off_restores_the_tree(self):
        self.assertEqual(self.venvtx("config", "probe", "import torch").returncode, 0)
        before_guard = tree_hash(self.venv)
        on = self.guard("on")
        self.assertEqual((on["guard"]["on"], on["changed"]), (True, True), on)
        guarded = tree_hash(self.venv)
        self.assertEqual(set(guarded) - set(before_guard), {os.path.relpath(p, self.venv) for p in on["guard"]["hooks"]})
        self.assertEqual(self.venvtx("verify").returncode, 0)  # the hooks belong to no distribution
        proc = self.shell("pip uninstall -y nvidia-cudnn-cu13", code=3)
        self.assertIn("probe", proc.stdout + proc.stderr)
        self.assertTreeEqual(guarded, tree_hash(self.venv))
        self.assertEqual(self.python("import torch").returncode, 0)
        self.assertIn(self.kinds()[0], [("run", "aborted"), ("run", "rolled_back")])  # previewed, or in place
        self.assertEqual(self.venvtx("verify").returncode, 0)
        off = self.guard("off")
        self.assertEqual((off["guard"]["on"], off["changed"], off["guard"]["hooks"]), (False, True, []), off)
        self.assertTreeEqual(before_guard, tree_hash(self.venv))
        # Off, the same plain command is plain pip again: it breaks the venv, and is an outside entry.
        self.shell("pip uninstall -q -y nvidia-cudnn-cu13")
        self.assertNotEqual(self.python("import torch").returncode, 0)
        self.assertEqual(self.kinds()[0][0], "outside")

    def test_every_way_of_typing_pip_is_caught_and_what_changes_nothing_is_not(self):
        self.guard("on")
        find = "--no-index --find-links " + self.wheels
        version = "%d.%d" % tuple(int(n) for n in self.python("import sys; print(*sys.version_info[:2])").stdout.split())
        typed = ["pip uninstall -q -y flash-attn",
                 "pip3 install -q %s flash-attn" % find,
                 "pip%s uninstall -q -y flash-attn" % version,
                 "python -m pip install -q %s flash-attn" % find,
                 "python3 -X utf8 -m pip uninstall -q -y flash-attn",
                 "%s/pip --disable-pip-version-check install -q %s flash-attn" % (self.bin, find),
                 # another pip aimed at the venv: pip's runner starts this venv's interpreter
                 "%s -m pip --python %s/python uninstall -q -y flash-attn" % (sys.executable, self.bin)]
        for n, line in enumerate(typed, 1):
            by_path = line.startswith((self.bin, sys.executable))
            env = self.env if by_path else self.active  # by path: no activation needed
            self.shell(line, env=env)
            self.assertEqual(len(self.kinds()), n, line)
            self.assertEqual(self.kinds()[0], ("run", "committed"), line)
        for line in ["pip list", "pip --version", "pip show torch", "pip install --dry-run %s flash-attn" % find,
                     "pip download -q -d %s/d %s flash-attn" % (self.tmp, find), "python -c 'import pip'"]:
            self.shell(line)
            self.assertEqual(len(self.kinds()), len(typed), line)
        self.shell("VENVTX_GUARD=0 pip install -q %s flash-attn" % find)  # the last line above removed it
        self.assertEqual(self.kinds()[0][0], "outside")  # bypassed: recorded by the next command, not run

    def test_pip_upgrades_itself_under_the_guard(self):
        wheels = glob.glob("/usr/share/python-wheels/pip-*.whl")  # Debian's python3-venv brings it
        if not wheels:
            self.skipTest("no pip wheel in /usr/share/python-wheels")
        self.guard("on")
        before = self.versions()["pip"]
        self.shell("pip install -q --no-index --find-links %s --force-reinstall pip" % os.path.dirname(wheels[0]))
        self.assertEqual(self.kinds()[0], ("run", "committed"))
        self.assertEqual(self.venvtx("verify").returncode, 0)
        # The new pip is still guarded, and the change undoes like any.
        self.shell("pip uninstall -q -y flash-attn")
        self.assertEqual(self.kinds()[0], ("run", "committed"))
        self.assertEqual(self.venvtx("rollback", "--to", "0", "--no-probe").returncode, 0)
        self.assertEqual(self.versions()["pip"], before)

    def test_an_uninstall_without_yes_asks_on_a_terminal_and_is_refused_without_one(self):
        self.guard("on")
        proc = self.shell("pip uninstall flash-attn", code=2)
        self.assertIn("pass -y", proc.stderr)
        self.assertIn("flash-attn", self.versions())
        for answer, kept in (("n\n", True), ("y\n", False)):
            master, slave = pty.openpty()
            os.write(master, answer.encode())
            proc = subprocess.run(["sh", "-c", "pip uninstall -q flash-attn"], stdin=slave, capture_output=True,
                                  text=True, env=self.active, cwd=self.tmp, timeout=300)
            os.close(slave)
            os.close(master)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("Proceed (Y/n)?", proc.stderr)
            self.assertEqual("flash-attn" in self.versions(), kept, answer)
        self.assertEqual(self.kinds()[0], ("run", "committed"))


class GuardCatchesUvPip(Guarded):
    def setUp(self):
        super().setUp()
        real = os.path.join(self.tmp, "realbin")
        os.makedirs(real)
        with open(os.path.join(real, "uv"), "w") as f:
            f.write(STAND_IN_UV)
        os.chmod(os.path.join(real, "uv"), 0o755)
        self.uv_log = os.path.join(self.tmp, "uv.log")
        self.active["PATH"] = self.bin + ":" + real + ":" + self.env["PATH"]
        self.active["UV_LOG"] = self.uv_log

    def calls(self):
        with open(self.uv_log) as f:
            return [line.split()[0] for line in f]

    def test_uv_pip_aimed_at_the_activated_venv_is_a_transaction_and_nothing_else_is(self):
        self.guard("on")
        self.shell("uv pip uninstall -q -y flash-attn")
        self.assertEqual(self.kinds()[0], ("run", "committed"))
        self.assertNotIn("flash-attn", self.versions())
        for line in ["uv --version", "uv pip list", "uv pip install --python /usr/bin/python3 x",
                     "uv pip install --dry-run x", "UV_PYTHON=/usr/bin/python3 uv pip install x"]:
            self.shell(line)
        self.shell("uv pip uninstall x", env=dict(self.active, VIRTUAL_ENV=self.tmp))  # another venv
        self.assertEqual(self.calls(), ["0"] + ["unset"] * 6)
        self.assertEqual(len(self.kinds()), 1)

    def test_a_uv_of_the_venvs_own_is_left_alone_and_off_leaves_the_tree(self):
        own = os.path.join(self.bin, "uv")
        with open(own, "w") as f:
            f.write("#!/bin/sh\necho the venv has its own uv\n")
        os.chmod(own, 0o755)
        before = tree_hash(self.venv)
        on = self.guard("on")
        self.assertIn("not the guard's", on["guard"]["uv_left"])
        self.assertEqual(len(on["guard"]["hooks"]), 1)
        self.assertIn("own uv", self.shell("uv pip install x").stdout)
        self.guard("off")
        self.assertTreeEqual(before, tree_hash(self.venv))


class GuardStatusIsHonest(Guarded):
    def test_a_guard_whose_venvtx_is_gone_says_so_and_on_rewrites_it(self):
        elsewhere = os.path.join(self.tmp, "bin", "venvtx")
        os.makedirs(os.path.dirname(elsewhere))
        shutil.copy2(VENVTX, elsewhere)
        proc = subprocess.run([elsewhere, "--venv", self.venv, "guard", "on"], capture_output=True, text=True,
                              env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        os.unlink(elsewhere)
        before = tree_hash(self.venv)
        proc = self.shell("pip uninstall -y flash-attn", code=1)
        self.assertIn("venvtx guard: cannot run %s" % elsewhere, proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        status = self.guard("status")["guard"]
        self.assertEqual((status["on"], status["current"], status["venvtx_runs"]), (True, False, False), status)
        self.assertIn("is gone", self.venvtx("guard").stdout)
        self.assertTrue(self.guard("on")["changed"])
        self.assertTrue(self.guard("status")["guard"]["current"])
        self.shell("pip uninstall -y flash-attn")
        self.assertEqual(self.kinds()[0], ("run", "committed"))

    def test_on_and_off_twice_change_nothing_the_second_time(self):
        startup_files = glob.glob(os.path.join(self.site, "*.pth"))
        self.assertFalse(self.guard("off")["changed"])
        self.assertTrue(self.guard("on")["changed"])
        hooks = tree_hash(self.venv)
        self.assertFalse(self.guard("on")["changed"])
        self.assertTreeEqual(hooks, tree_hash(self.venv))
        self.assertTrue(self.guard("off")["changed"])
        self.assertFalse(self.guard("off")["changed"])
        self.assertEqual(glob.glob(os.path.join(self.site, "*.pth")), startup_files)
        self.assertFalse(os.path.exists(os.path.join(self.bin, "uv")))


if __name__ == "__main__":
    unittest.main()
