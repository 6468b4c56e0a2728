#!/usr/bin/env python3
"""Benchmark: the scan of the live venv after a watched command (ops/outside_changes), at torch
scale, against `find` printing every path's inode and ctime of the same venv in the same run.

On a copy of the torch-scale fixture (tests/fixtures/torch_scale.py, ~49,000 files), runs
`venvtx -v run --preview never -- true` and reads the scan's own figure from the debug log
("checked the live venv after the command: N paths in S s"); the peer is
`find VENV -printf '%i %C@\\n'` to /dev/null. Median over --rounds; the goal is <= 0.050 s.

usage: bench/live_scan_cost.py [--rounds N] [--venvtx PATH] [--fixture DIR] [--workdir DIR]
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import torch_scale_arguments, torch_scale_template  # noqa: E402

SCANNED = re.compile(r"checked the live venv after the command: (\d+) paths in ([0-9.]+) s")


def main():
    parser = torch_scale_arguments(__doc__.splitlines()[0], rounds=5)
    args = parser.parse_args()
    template = torch_scale_template(args.fixture)
    work = tempfile.mkdtemp(prefix="venvtx-scan-", dir=args.workdir)
    venv = os.path.join(work, "venv")
    ours, theirs, paths = [], [], 0
    try:
        subprocess.run(["cp", "-a", "--sparse=always", template, venv], check=True)
        os.sync()  # the copy written back before anything is timed
        for _ in range(args.rounds):
            proc = subprocess.run([os.path.abspath(args.venvtx), "--venv", venv, "-v", "run", "--preview", "never",
                                   "--", "true"], capture_output=True, text=True)
            found = SCANNED.search(proc.stderr)
            if proc.returncode != 0 or not found:
                sys.exit("bench: venvtx run failed or said no scan figure (%d): %s" % (proc.returncode, proc.stderr[-800:]))
            paths, seconds = int(found.group(1)), float(found.group(2))
            ours.append(seconds)
            started = time.perf_counter()
            subprocess.run(["find", venv, "-printf", "%i %C@\\n"], stdout=subprocess.DEVNULL, check=True)
            theirs.append(time.perf_counter() - started)
        v, p = statistics.median(ours), statistics.median(theirs)
        print("live scan after a command, %d paths, median of %d: %.3f s vs find -printf %.3f s: %.2fx; "
              "goal <= 0.050 s%s" % (paths, args.rounds, v, p, v / p, "" if v <= 0.05 else "  MISSED"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
