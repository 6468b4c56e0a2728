#!/usr/bin/env python3
"""Benchmark: the words a completion script asks venvtx for as someone presses Tab, on the
torch-scale fixture (~125 distributions, a history of 30 entries), against `pip list` (what a
completion built on pip would run; goal: <= 50 ms each, issue 26):

- `venvtx __complete dists` (remove, why): the names of every distribution;
- `venvtx __complete entries` (rollback, show, diff, --to, --at): the newest entries.

Medians over --rounds.

usage: bench/completion_words.py [--rounds N] [--venvtx PATH] [--fixture DIR] [--workdir DIR]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_time, torch_scale_arguments, torch_scale_template  # noqa: E402


def main():
    args = torch_scale_arguments(__doc__.splitlines()[0], rounds=15).parse_args()
    venvtx = os.path.abspath(args.venvtx)
    template = torch_scale_template(args.fixture)
    work = args.workdir or tempfile.mkdtemp(prefix="venvtx-bench-completion-")
    venv = os.path.join(work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", template, venv], check=True)
    for _ in range(30):
        subprocess.run([venvtx, "--venv", venv, "stamp"], check=True, capture_output=True)
    python = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip_list = median_time([python, "-m", "pip", "list"], args.rounds, env)
    print("torch-scale fixture, medians of %d rounds" % args.rounds)
    for what in ("dists", "entries"):
        ours = median_time([venvtx, "--venv", venv, "__complete", what], args.rounds * 3)
        print("  %-26s %6.1f ms vs pip list %7.1f ms = %.3fx  (goal <= 50 ms: %s)" % (
            "__complete " + what, ours * 1000, pip_list * 1000, ours / pip_list, "met" if ours <= 0.050 else "MISSED"))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
