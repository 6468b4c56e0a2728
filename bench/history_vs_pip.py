#!/usr/bin/env python3
"""Benchmark: the venv's history of states at torch scale (issue 25), each figure against a peer
run in the same script, on the torch-scale fixture (~49,000 files, ~125 distributions):

- `venvtx status` (open the store, check the venv's state, compare with the last recorded one)
  against `pip list` (goal: <= 0.1x);
- the state check every command makes at its start, as `venvtx -v log -n 1` times it in-process
  (goal: <= 10 ms warm);
- `venvtx diff A B` of two recorded points (and with --libs) against `pip list` (goal: <= 0.1x);
- `venvtx status --files` (every RECORD-listed file stat'ed, none re-read: warm) against
  `find <site-packages> -type f -newer X`, which must stat every file too (goal: <= 1.5x);
- `venvtx exec -- python -c pass` against `python -c pass`: what a tracked run adds at its start
  and end (goal: <= 50 ms);
- venvtx's own CPU while a tracked command runs (`exec -- python` holding ~40 shared objects
  mapped, sleeping 5 s, against the same at 0 s: the difference over 5 s; goal: <= 1%).

Medians over --rounds. `log` of 10,000 entries is bench/log_10k.py.

usage: bench/history_vs_pip.py [--rounds N] [--venvtx PATH] [--fixture DIR] [--workdir DIR]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_time, torch_scale_arguments, torch_scale_template  # noqa: E402

HOLD = ("import ctypes, ssl, sqlite3, decimal, json, lzma, bz2, zlib, hashlib, time, sys; "
        "time.sleep(float(sys.argv[1]))")


def cpu_seconds(cmd):
    """User + system CPU of `cmd` and every process it waited for."""
    pid = os.posix_spawn(cmd[0], cmd, os.environ)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: %s failed" % " ".join(cmd[:5]))
    return usage.ru_utime + usage.ru_stime


def main():
    args = torch_scale_arguments(__doc__.splitlines()[0], rounds=9).parse_args()
    venvtx = os.path.abspath(args.venvtx)
    template = torch_scale_template(args.fixture)
    work = args.workdir or tempfile.mkdtemp(prefix="venvtx-bench-history-")
    venv = os.path.join(work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", template, venv], check=True)
    python = os.path.join(venv, "bin", "python")
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    run = lambda *a: subprocess.run([venvtx, "--venv", venv, *a], check=True, capture_output=True, text=True)  # noqa: E731
    run("stamp")
    run("remove", "networkx", "jinja2")
    time.sleep(2.5)  # past the two seconds within which a dist-info's facts are not cached
    run("status", "--files")  # warm: every dist-info's facts and every file's key cached

    rows = []
    pip_list = median_time([python, "-m", "pip", "list"], args.rounds, env)
    status = median_time([venvtx, "--venv", venv, "status"], args.rounds * 3)
    rows.append(("status vs pip list", status, pip_list, 0.1))
    diff = median_time([venvtx, "--venv", venv, "diff", "1", "2"], args.rounds * 3)
    rows.append(("diff 1 2 vs pip list", diff, pip_list, 0.1))
    libs = median_time([venvtx, "--venv", venv, "diff", "1", "2", "--libs"], args.rounds)
    rows.append(("diff 1 2 --libs vs pip list", libs, pip_list, None))
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    find = median_time(["find", site, "-type", "f", "-newer", os.path.join(venv, "pyvenv.cfg")], args.rounds)
    files = median_time([venvtx, "--venv", venv, "status", "--files"], args.rounds)
    rows.append(("status --files vs find -newer", files, find, 1.5))
    checks = []
    for _ in range(args.rounds * 3):
        said = subprocess.run([venvtx, "-v", "--venv", venv, "log", "-n", "1"], capture_output=True, text=True).stderr
        checks.append(float(said.split("state check: ", 1)[1].split(" ms", 1)[0]) / 1000)
    check = statistics.median(checks)
    bare = median_time([python, "-c", "pass"], args.rounds * 3)
    tracked = median_time([venvtx, "--venv", venv, "exec", "--", python, "-c", "pass"], args.rounds * 3)

    held = 5.0
    short = statistics.median(cpu_seconds([venvtx, "--venv", venv, "exec", "--", python, "-c", HOLD, "0"])
                              - cpu_seconds([python, "-c", HOLD, "0"]) for _ in range(3))
    long = statistics.median(cpu_seconds([venvtx, "--venv", venv, "exec", "--", python, "-c", HOLD, str(held)])
                             - cpu_seconds([python, "-c", HOLD, str(held)]) for _ in range(3))

    print("torch-scale fixture, medians of %d rounds" % args.rounds)
    for what, ours, peer, goal in rows:
        ratio = ours / peer
        verdict = "" if goal is None else ("  (goal <= %.2fx: %s)" % (goal, "met" if ratio <= goal else "MISSED"))
        print("  %-30s %7.1f ms vs %7.1f ms = %.3fx%s" % (what, ours * 1000, peer * 1000, ratio, verdict))
    print("  %-30s %7.2f ms (goal <= 10 ms: %s)" % ("state check at a command's start", check * 1000,
                                                  "met" if check <= 0.010 else "MISSED"))
    added = tracked - bare
    print("  %-30s %7.1f ms vs %7.1f ms: +%.1f ms (goal <= 50 ms: %s)" % (
        "exec -- python -c pass", tracked * 1000, bare * 1000, added * 1000, "met" if added <= 0.050 else "MISSED"))
    share = max(long - short, 0.0) / held
    print("  %-30s %.2f%% of one core over %.0f s (goal <= 1%%: %s)" % (
        "exec CPU while it runs", share * 100, held, "met" if share <= 0.01 else "MISSED"))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
