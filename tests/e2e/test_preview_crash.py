"""kill -9 at every mutating step of a previewed change (issue 11), then `venvtx recover`: the
live venv is exactly the before- or the after-state, nothing stays mounted, no preview layer is
left, and the index says which. Sampled like test_crash (VENVTX_FULL_SWEEPS=1: every step)."""
import unittest

import test_crash


class PreviewSweep(test_crash.SweepCase):
    """Previewed (the default with a probe): killed while the view exists, the live venv is
    untouched and nothing stays mounted; killed while a passing change is applied, `recover`
    brings back the before-state."""

    def test_previewed_remove(self):
        template = self.prepare()
        self.sweep(template, ["remove", "sglang", "flash*", "--preview", "always", "--probe", "import torch"], 0,
                   "committed")

    def test_previewed_remove_whose_probe_fails(self):
        template = self.prepare()
        self.sweep(template, ["remove", "nvidia-*-cu13", "--preview", "always", "--probe", "import torch"], 3,
                   "aborted")

    def test_previewed_pip_install(self):
        template, args = test_crash.CommandSweep.pip_install(self, "--preview", "always")
        self.sweep(template, args, 0, "committed")


if __name__ == "__main__":
    unittest.main()
