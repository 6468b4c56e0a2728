#!/usr/bin/env python3
"""Benchmark: venvtx against pip at real scale, in one run, on identical copies of the
torch-scale fixture (tests/fixtures/torch_scale.py: ~49,000 files, ~125 distributions, sparse
ELF libraries of the real sizes; built once and reused). Prints each ratio and its goal:

- remove networkx + jinja2 (small), torch (12,000 files, 1 GB), the four nvidia-*-cu13:
  `venvtx remove` (capture included, no probe) vs `pip uninstall -y`;
- rollback of the torch removal vs `pip install --no-index --no-deps --no-compile` of the same
  torch from its local wheel (pip's fastest install: no bytecode);
- a warm plan of the small removal (`remove --dry-run`, the store's caches filled);
- `log` of 10,000 transactions (bench/log_10k.py, which prints its own peer).

Each round copies the template twice (`cp -a --sparse=always`); venvtx and pip alternate who
runs first; both must leave the same files. Medians over --rounds.

--baseline OLD: an older venvtx build runs each case too, on a third copy in the same round, its
turn rotating with the others; a column prints venvtx / baseline, so a change is measured against
the code before it in the same minutes, not against a figure from another hour.

usage: bench/torch_scale_vs_pip.py [--rounds N] [--venvtx PATH] [--baseline PATH] [--fixture DIR]
                                   [--workdir DIR] [--phases]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import timed, torch_scale_arguments, torch_scale_template  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
CASES = [("remove networkx jinja2", ["networkx", "jinja2"], 0.7),
         ("remove torch", ["torch"], 0.6),
         ("remove the four cu13", CU13, 0.5)]


def files_of(venv):
    """Files and symlinks, bytecode aside (pip leaves emptied directories and other interpreters'
    bytecode behind; venvtx removes them)."""
    out = set()
    for d, dirs, files in os.walk(venv):
        if d == venv:
            dirs[:] = [x for x in dirs if x != ".venvtx"]
            files = [x for x in files if x != ".lock"]
        if os.path.basename(d) != "__pycache__":
            out.update(os.path.relpath(os.path.join(d, x), venv) for x in files)
    return out


def fresh_copies(template, work, count):
    copies = []
    for name in "abc"[:count]:
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["cp", "-a", "--sparse=always", template, path], check=True)
        copies.append(path)
    return copies


def same_files(a, b, what):
    def kept(venv):  # pip install adds REQUESTED; the rest must match
        return {f for f in files_of(venv) if not f.endswith(".dist-info/REQUESTED")}

    left, right = kept(a), kept(b)
    if left != right:
        sys.exit("bench: %s: venvtx and pip left different files: only venvtx: %s, only pip: %s"
                 % (what, sorted(left - right)[:5], sorted(right - left)[:5]))


def rotated(runs, round_no):
    """`runs` starting at a different one each round, so none always runs first."""
    shift = round_no % len(runs)
    return runs[shift:] + runs[:shift]


def against_baseline(results, label, ours):
    """The baseline's median seconds and venvtx's time over it, where a baseline ran."""
    if (label, "baseline") not in results:
        return ""
    theirs = statistics.median(results[(label, "baseline")])
    return "  %10.3f  %14.2fx" % (theirs, ours / theirs)


def main():
    parser = torch_scale_arguments(__doc__.splitlines()[0], rounds=3)
    parser.add_argument("--phases", action="store_true", help="print venvtx -v phase timings of the last round")
    parser.add_argument("--baseline", help="an older venvtx build to run beside --venvtx")
    args = parser.parse_args()
    venvtx = os.path.abspath(args.venvtx)
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    template = torch_scale_template(args.fixture)
    wheels = os.path.join(args.fixture, "wheels")
    count = sum(len(files) for _, _, files in os.walk(template))
    print("fixture: %s (%d files)" % (template, count))
    work = tempfile.mkdtemp(prefix="venvtx-scale-", dir=args.workdir)
    results = {}
    phases = []
    try:
        for round_no in range(args.rounds):
            for label, names, _ in CASES:
                copies = fresh_copies(template, work, 3 if baseline else 2)
                a, b = copies[0], copies[1]
                by_venvtx = [a] + copies[2:]  # venvtx's copy and the baseline's, each compared with pip's
                verbosity = "-v" if args.phases else "--quiet"
                runs = [("venvtx", [venvtx, "--venv", a, verbosity, "remove", "--no-probe", *names]),
                        ("pip", [b + "/bin/python", "-m", "pip", "uninstall", "-y", "-q", *names])]
                if baseline:
                    runs.append(("baseline", [baseline, "--venv", copies[2], "--quiet", "remove", "--no-probe", *names]))
                for who, cmd in rotated(runs, round_no):
                    seconds, proc = timed(cmd)
                    results.setdefault((label, who), []).append(seconds)
                    if who == "venvtx" and args.phases and round_no == args.rounds - 1:
                        phases.append((label, proc.stderr))
                for copy in by_venvtx:
                    same_files(copy, b, label)
                if names == ["torch"]:
                    runs = [("venvtx", [venvtx, "--venv", a, verbosity, "rollback"]),
                            ("pip", [b + "/bin/python", "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                     "--no-compile", "--find-links", wheels, "torch==2.11.0"])]
                    if baseline:
                        runs.append(("baseline", [baseline, "--venv", copies[2], "--quiet", "rollback"]))
                    for who, cmd in rotated(runs, round_no):
                        seconds, proc = timed(cmd)
                        results.setdefault(("rollback torch", who), []).append(seconds)
                        if who == "venvtx" and args.phases and round_no == args.rounds - 1:
                            phases.append(("rollback torch", proc.stderr))
                    for copy in by_venvtx:
                        same_files(copy, b, "rollback of torch")
                if names == ["networkx", "jinja2"]:
                    for who, binary, copy in [("venvtx", venvtx, a), ("baseline", baseline, by_venvtx[-1])]:
                        if binary:
                            timed([binary, "--venv", copy, "--quiet", "rollback"])
                            plan = [binary, "--venv", copy, "--quiet", "remove", "--dry-run", *names]
                            timed(plan)  # fills the caches
                            results.setdefault(("warm plan", who), []).append(min(timed(plan)[0] for _ in range(3)))
        print("%-28s %9s %9s %7s %-26s%s" % ("median of %d rounds" % args.rounds, "venvtx s", "peer s", "ratio", "goal",
                                              "  baseline s  venvtx/baseline" if baseline else ""))
        failed = []
        for label, _, goal in CASES + [("rollback torch", None, 0.3)]:
            v, p = statistics.median(results[(label, "venvtx")]), statistics.median(results[(label, "pip")])
            peer = "pip install" if label == "rollback torch" else "pip uninstall"
            ok = v / p <= goal
            failed += [] if ok else [label]
            print("%-28s %9.3f %9.3f %6.2fx %-26s%s%s" % (label, v, p, v / p, "<= %.1fx vs %s" % (goal, peer),
                                                       against_baseline(results, label, v), "" if ok else "  MISSED"))
        warm = statistics.median(results[("warm plan", "venvtx")])
        failed += [] if warm <= 0.1 else ["warm plan"]
        print("%-28s %9.3f %9s %7s %-26s%s%s" % ("warm plan (small removal)", warm, "", "", "<= 0.100 s",
                                               against_baseline(results, "warm plan", warm),
                                               "" if warm <= 0.1 else "  MISSED"))
        for label, text in phases:
            print("\n%s (venvtx -v):\n%s" % (label, "\n".join("  " + l for l in text.splitlines() if "(" in l)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log = subprocess.run([sys.executable, os.path.join(HERE, "log_10k.py"), "--venvtx", venvtx],
                         capture_output=True, text=True)
    print("\nlog of 10,000 transactions (bench/log_10k.py):")
    print("\n".join("  " + line for line in log.stdout.splitlines()[-7:]))
    if failed:
        print("missed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
