"""A removal venvtx knows will break a staying distribution is not committed silently (issue 40,
item 0): with no probe given or saved, `remove nvidia-cusparselt-cu13` is refused (exit 2, one
line) naming the library, who needs it, the probe that would check it (`import torch`) and
--force, the venv untouched; with the probe it is tried and undone; --force or --no-probe
commits it, and every unprobed commit says "not probed". Real ELF loading decides the probe."""
import unittest

from support import VenvTestCase, tree_hash


class UnprobedBreakage(VenvTestCase):
    def test_refused_without_a_probe_and_nothing_changes(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "nvidia-cusparselt-cu13")
        self.assertOneLineError(proc, 2)
        for said in ("libcusparseLt.so.0", "nvidia-cusparselt-cu13", "torch needs it",
                     "--probe 'import torch'", "--force", "nothing was changed"):
            self.assertIn(said, proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.python("import torch").returncode, 0)
        self.assertEqual(self.venvtx_json("log")[1], [])
        # The dry run says so before.
        dry = self.venvtx("remove", "nvidia-cusparselt-cu13", "--dry-run")
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("without a probe it would be refused", dry.stdout)

    def test_the_suggested_probe_catches_it_and_a_saved_one_is_a_probe(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "nvidia-cusparselt-cu13", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("config", "probe", "import sglang").returncode, 0)
        proc = self.venvtx("remove", "nvidia-cusparselt-cu13")  # the saved probe runs: sglang imports
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotIn("not probed", proc.stdout)

    def test_force_and_no_probe_commit_it_and_say_not_probed(self):
        for flag, name in (("--force", "nvidia-cusparselt-cu13"), ("--no-probe", "nvidia-nvshmem-cu13")):
            proc = self.venvtx("remove", name, flag)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("not probed", proc.stdout)
        self.assertNotEqual(self.python("import torch").returncode, 0)

    def test_a_removal_that_breaks_nothing_goes_but_says_not_probed(self):
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("not probed", proc.stdout)


if __name__ == "__main__":
    unittest.main()
