"""Which venv (issue 40, item 5): a mutating command's first line names the venv it acts on and
how it was found; `.venv` is looked for in the working directory and above it, as uv does; a
$VIRTUAL_ENV that differs from that .venv is used, with a warning naming both; a $VIRTUAL_ENV
that is not a venv is a one-line error that says it came from $VIRTUAL_ENV."""
import os
import subprocess
import unittest

from support import VENVTX, VenvTestCase


class WhichVenv(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.project = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(self.project, "src", "deep"))
        os.rename(self.venv, os.path.join(self.project, ".venv"))
        self.venv = os.path.join(self.project, ".venv")

    def plain(self, *args, env=None, cwd=None):
        """venvtx without --venv, as typed in a project."""
        return subprocess.run([VENVTX, *args], capture_output=True, text=True, env=env or self.env,
                              cwd=cwd or os.path.join(self.project, "src", "deep"))

    def test_a_dot_venv_above_the_working_directory_is_found_and_named(self):
        proc = self.plain("remove", "flash-attn", "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines()[0], "venv %s (.venv)" % os.path.realpath(self.venv))
        proc = self.plain("--venv", self.venv, "remove", "flash-attn", "--dry-run")
        self.assertEqual(proc.stdout.splitlines()[0], "venv %s (--venv)" % os.path.realpath(self.venv))
        self.assertEqual(self.plain("-q", "remove", "flash-attn", "--dry-run").stdout, "")  # -q: no such line

    def test_an_activated_venv_wins_over_the_dot_venv_with_a_warning(self):
        other = os.path.join(self.tmp, "other")
        subprocess.run(["cp", "-a", self.venv, other], check=True)
        proc = self.plain("remove", "flash-attn", "--dry-run", env=dict(self.env, VIRTUAL_ENV=other))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines()[0], "venv %s ($VIRTUAL_ENV)" % os.path.realpath(other))
        self.assertIn("acting on %s ($VIRTUAL_ENV), not %s" % (os.path.realpath(other), os.path.realpath(self.venv)),
                      proc.stderr)
        quiet = self.plain("remove", "flash-attn", "--dry-run", env=dict(self.env, VIRTUAL_ENV=self.venv))
        self.assertNotIn("warning", quiet.stderr)  # the same venv: nothing to warn of

    def test_a_bad_virtual_env_says_where_it_came_from(self):
        proc = self.plain("log", env=dict(self.env, VIRTUAL_ENV=os.path.join(self.tmp, "gone")))
        self.assertOneLineError(proc, 2)
        self.assertTrue(proc.stderr.startswith("venvtx: from $VIRTUAL_ENV: "), proc.stderr)
        self.assertIn("--venv", proc.stderr)


if __name__ == "__main__":
    unittest.main()
