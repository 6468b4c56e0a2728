#!/usr/bin/env python3
"""Mutation testing: each mutant in mutants.json puts one realistic bug into a clean copy of
HEAD (one string replaced, which must occur exactly once), rebuilds that copy (ccache makes it
a few files' work), and runs the tests that guard the guarantee it breaks. A mutant is caught
when one of them fails. Prints a caught/survived table; exits 1 if any mutant survived.

usage: tests/mutants/run.py [--cheap] [--only NAME ...] [--table FILE]
  --cheap   only the mutants marked cheap (ctest runs these on every submission)
  --table   also write the table to FILE (docs/mutants.md keeps the last full run)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def clean_copy(work):
    """HEAD's tracked files, as a fresh clone would have them."""
    archive = subprocess.run(["git", "-C", REPO, "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", work], input=archive, check=True)


def mutate(work, mutant):
    path = os.path.join(work, mutant["file"])
    with open(path) as f:
        text = f.read()
    if text.count(mutant["old"]) != 1:
        raise SystemExit("mutant %s: its line is not in %s exactly once (the code moved: update mutants.json)"
                         % (mutant["name"], mutant["file"]))
    with open(path, "w") as f:
        f.write(text.replace(mutant["old"], mutant["new"]))


def unmount_below(work):
    """Unmounts the tmpfs mounts a failing test keeps (tests/e2e/support.py, `scratch`) below
    `work`, deepest first."""
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].replace("\\040", " ") for line in f]
    for point in sorted((p for p in points if p.startswith(work + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", point])


def run_tests(work, mutant):
    """The names of the tests that failed (caught it)."""
    failed = []
    for test in mutant["tests"]:
        env = dict(os.environ, **test.get("env", {}))
        env["VENVTX_BIN"] = os.path.join(work, "build", "venvtx")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["TMPDIR"] = os.path.join(work, "tmp")  # what its failing tests keep goes with the copy
        if "unit" in test:
            command = [os.path.join(work, "build", "tests", "venvtx_unit"), "-ts=" + test["unit"]]
            label = "unit " + test["unit"]
            cwd = work
        else:
            command = [sys.executable, "-m", "unittest", *test["e2e"]]
            label = " ".join(test["e2e"])
            cwd = os.path.join(work, "tests", "e2e")
        if test.get("env"):
            label += " (" + " ".join("%s=%s" % kv for kv in test["env"].items()) + ")"
        if subprocess.run(command, cwd=cwd, env=env, capture_output=True).returncode != 0:
            failed.append(label)
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cheap", action="store_true")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--table")
    args = parser.parse_args()
    with open(os.path.join(HERE, "mutants.json")) as f:
        mutants = json.load(f)
    if args.cheap:
        mutants = [m for m in mutants if m.get("cheap")]
    if args.only:
        mutants = [m for m in mutants if m["name"] in args.only]
    rows, survived = [], 0
    for mutant in mutants:
        started = time.monotonic()
        work = tempfile.mkdtemp(prefix="venvtx-mutant-%s-" % mutant["name"])
        try:
            clean_copy(work)
            os.mkdir(os.path.join(work, "tmp"))
            mutate(work, mutant)
            built = subprocess.run(["bash", "scripts/build.sh", "venvtx", "venvtx_unit"], cwd=work,
                                   capture_output=True, text=True)
            if built.returncode != 0:
                raise SystemExit("mutant %s does not build:\n%s" % (mutant["name"], built.stdout[-2000:] + built.stderr[-2000:]))
            failed = run_tests(work, mutant)
        finally:
            unmount_below(work)
            shutil.rmtree(work, ignore_errors=True)
        survived += not failed
        tests = "; ".join(t.get("unit") and "unit " + t["unit"] or " ".join(t["e2e"]) for t in mutant["tests"])
        rows.append("| %s | %s | `%s` | %s | %.0f s |" % (mutant["name"], mutant["guarantee"], mutant["file"],
                                                        "caught by " + ", ".join(failed) if failed else "**SURVIVED** (" + tests + ")",
                                                        time.monotonic() - started))
        print(rows[-1], flush=True)
    table = "\n".join(["| mutant | guarantee broken | where | result | time |", "|---|---|---|---|---|"] + rows)
    print("\n%s\n\n%d of %d caught" % (table, len(rows) - survived, len(rows)))
    if args.table:
        with open(args.table, "w") as f:
            f.write("# Mutants: the last full run of tests/mutants/run.py\n\n"
                    "Each row put one bug into a clean copy of HEAD and ran the tests named for it.\n\n"
                    + table + "\n\n%d of %d caught.\n" % (len(rows) - survived, len(rows)))
    sys.exit(1 if survived else 0)


if __name__ == "__main__":
    main()
