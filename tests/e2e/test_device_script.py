"""tests/device/real_torch.sh, the script for the real GPU target, exercised here on the story
venv so it is known to work before it reaches the device (issue 6)."""
import os
import subprocess
import unittest

from support import REPO, VENVTX, VenvTestCase


class DeviceScriptOnCpu(VenvTestCase):
    def test_script_runs_green_against_the_story_venv(self):
        out = os.path.join(self.tmp, "out")
        env = dict(self.env, VENV=self.venv, VENVTX=VENVTX, OUT=out, WORK=os.path.join(self.tmp, "work"),
                   HARMLESS="sglang flash-attn", VENVTX_FAKE_GPUS="2", PIP_CONFIG_FILE=os.devnull)
        proc = subprocess.run(["bash", os.path.join(REPO, "tests", "device", "real_torch.sh")],
                              capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        table = proc.stdout
        self.assertRegex(table, r"baseline probe\s+exit 0 .*GPUs: Fake GPU 0, Fake GPU 1")
        self.assertRegex(table, r"remove nvidia-\*-cu13 \+ probe\s+exit 3 .*live venv unchanged: yes; "
                                r"reader imports failed: 0 of [1-9]")
        self.assertRegex(table, r"--preview never\s+exit 3 .*byte-identical after restore: yes")
        self.assertRegex(table, r"remove nvidia-\*-cu13 --keep-going\s+exit 3 .*probes, exact")
        self.assertRegex(table, r"kept +nvidia-cusparselt-cu13 +with it removed, the probe failed: ImportError")
        self.assertRegex(table, r"rollback\s+exit 0 .*byte-identical: yes")
        self.assertRegex(table, r"venvtx/pip = [0-9.]+x")
        self.assertRegex(table, r"remove torch \(no probe\)\s+exit 0/0 .*: [0-9.]+x \(goal 0.6x\)")
        self.assertRegex(table, r"rollback of torch vs pip install\s+exit 0/0 .*: [0-9.]+x \(goal 0.3x\); byte-identical: yes")
        self.assertRegex(table, r"warm plan: remove sglang flash-attn\s+exit 0 ")
        self.assertTrue(os.path.exists(os.path.join(out, "table.txt")))
        with open(os.path.join(out, "3-remove.txt")) as f:
            self.assertIn("ImportError", f.read())


if __name__ == "__main__":
    unittest.main()
