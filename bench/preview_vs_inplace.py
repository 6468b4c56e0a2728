#!/usr/bin/env python3
"""Benchmark: `venvtx remove --probe` with preview (the default) against `--preview never`, for
a removal whose probe fails and one whose probe passes, and `--keep-going` against one probe,
on identical copies of the real-library venv of bench/remove_vs_pip.py, in one run.

The probe sleeps --probe-seconds (default 4.5: what `import torch` takes on the H200 venv,
where a failing import also spends most of that time before the missing library), then loads
every cuDNN library of the venv with ctypes (real CUDA 13 libraries from /usr/local/cuda-13.0). In place, a transaction probes
twice in a row (baseline, then after); with preview, the baseline and the probe of the change
run side by side, so the goal is <= 0.6x.

usage: bench/preview_vs_inplace.py [--rounds N] [--probe-seconds S] [--synthetic] [--venvtx PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remove_vs_pip  # noqa: E402  (the venv builder)

PROBE = ("import ctypes, glob, os, sys, time\n"
         "time.sleep(%s)\n"
         "site = [p for p in sys.path if p.endswith('site-packages')][0]\n"
         "libs = sorted(glob.glob(os.path.join(site, 'nvidia/cudnn/lib/libcudnn*.so.9')))\n"
         "assert libs, 'no cuDNN library in the venv'\n"
         "[ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL) for p in libs]\n")


def timed(cmd, expected):
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != expected:
        sys.exit("bench: %s exited %d, not %d: %s%s" % (" ".join(cmd[3:6]), proc.returncode, expected,
                                                        proc.stdout[-400:], proc.stderr[-400:]))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--probe-seconds", type=float, default=4.5)
    parser.add_argument("--synthetic", action="store_true", help="ignore /usr/local/cuda-13.0")
    parser.add_argument("--venvtx", default=os.path.join(os.path.dirname(__file__), "..", "build", "venvtx"))
    args = parser.parse_args()
    use_real = not args.synthetic and os.path.isdir(os.path.join(remove_vs_pip.CUDA, "dist-info"))
    if not use_real:
        sys.exit("bench: the probe loads real cuDNN libraries: needs /usr/local/cuda-13.0")
    probe = PROBE % args.probe_seconds
    work = tempfile.mkdtemp(prefix="venvtx-bench-preview-")
    try:
        template, total = remove_vs_pip.build_template(work, use_real)
        print("venv: %s, %.0f MB; the probe sleeps %.1fs, then loads cuDNN" % (
            ", ".join(remove_vs_pip.NAMES), total / 1e6, args.probe_seconds))
        copy = os.path.join(work, "copy")
        cases = [
            ("failing remove (cudnn)", ["remove", "nvidia-cudnn-cu13"], 3),
            ("passing remove (nccl)", ["remove", "nvidia-nccl-cu13"], 0),
        ]
        results = {}
        for label, command, expected in cases:
            for mode in ("auto", "never"):
                times = []
                for _ in range(args.rounds):
                    shutil.rmtree(copy, ignore_errors=True)
                    subprocess.run(["cp", "-a", template, copy], check=True)
                    times.append(timed([args.venvtx, "--venv", copy, "--quiet", *command, "--preview", mode,
                                        "--probe", probe], expected))
                results[(label, mode)] = statistics.median(times)
        keep, single = [], []
        for _ in range(args.rounds):
            shutil.rmtree(copy, ignore_errors=True)
            subprocess.run(["cp", "-a", template, copy], check=True)
            single.append(timed([copy + "/bin/python", "-c", probe], 0))
            keep.append(timed([args.venvtx, "--venv", copy, "--quiet", "remove", *remove_vs_pip.NAMES,
                               "--keep-going", "--probe", probe], 0))
        print("%-34s %9s %9s %7s" % ("median of %d rounds" % args.rounds, "preview", "in place", "ratio"))
        for label, _, _ in cases:
            p, n = results[(label, "auto")], results[(label, "never")]
            print("%-34s %8.2fs %8.2fs %6.2fx" % (label, p, n, p / n))
        k, s = statistics.median(keep), statistics.median(single)
        print("%-34s %8.2fs %9s %6.2fx  (against one probe, %.2fs)" % (
            "keep-going, 3 distributions", k, "", k / s, s))
        worst = max(results[(label, "auto")] / results[(label, "never")] for label, _, _ in cases)
        print("preview / in place <= %.2fx (goal <= 0.60x)" % worst)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
