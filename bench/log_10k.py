#!/usr/bin/env python3
"""Benchmark: history at scale. A real history (removals, a 12,000-file removal, rollbacks, made
by venvtx on the story venv) is multiplied in its own index to 10,000 transactions (rows copied
with SQLite, entries and packages included), then, in one run: `venvtx log` (all of them),
`log -n 20`, `log --json`, and `show` of the 12,000-file transaction, each against the sqlite3
tool reading the same transaction rows (the floor any history listing pays).

usage: bench/log_10k.py [--transactions N] [--rounds N] [--venvtx PATH]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from test_progress import write_installed_dist  # noqa: E402  (a pip-laid-out distribution, fast)


def timed(cmd, rounds):
    """Median wall time with stdout to /dev/null (as `time cmd > /dev/null`: Python reading and
    decoding a megabyte of output is not the command's cost), and the output of one more run."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            sys.exit("bench: %s failed (%d): %s" % (" ".join(cmd[:4]), proc.returncode, proc.stderr.strip()))
    return statistics.median(times), subprocess.run(cmd, capture_output=True, text=True).stdout


def multiply(index, target):
    """Copies the history's transactions (with their packages, and the entries of the small ones)
    until there are `target`; the copies keep their states and counts, under new ids."""
    db = sqlite3.connect(index)
    base = db.execute("SELECT MAX(id) FROM transactions").fetchone()[0]
    columns = [r[1] for r in db.execute("PRAGMA table_info(transactions)") if r[1] not in ("id", "undoes", "undone_by")]
    entry_columns = [r[1] for r in db.execute("PRAGMA table_info(entries)") if r[1] not in ("id", "tx_id")]
    # The 12,000-file transactions' copies keep their counts but not their entries: 10,000 of
    # them would be 40 million rows; a long real history is mostly small transactions.
    small = {tx: db.execute("SELECT COUNT(*) FROM entries WHERE tx_id = ?", (tx,)).fetchone()[0] <= 1000
             for tx in range(1, base + 1)}
    total = base
    while total < target:
        for tx in range(1, base + 1):
            if total >= target:
                break
            total += 1
            db.execute("INSERT INTO transactions (id, %s) SELECT ?, %s FROM transactions WHERE id = ?"
                       % (", ".join(columns), ", ".join(columns)), (total, tx))
            if small[tx]:
                db.execute("INSERT INTO entries (tx_id, %s) SELECT ?, %s FROM entries WHERE tx_id = ?"
                           % (", ".join(entry_columns), ", ".join(entry_columns)), (total, tx))
            db.execute("INSERT INTO packages (tx_id, name, before, after) SELECT ?, name, before, after "
                       "FROM packages WHERE tx_id = ?", (total, tx))
    db.commit()
    entries = db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    db.close()
    return total, entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--venvtx", default=os.path.join(HERE, "..", "build", "venvtx"))
    args = parser.parse_args()
    venvtx = os.path.abspath(args.venvtx)
    work = tempfile.mkdtemp(prefix="venvtx-bench-log-")
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "fixtures", "make_story_venv.py"), work],
                       check=True, stdout=subprocess.DEVNULL)
        venv = os.path.join(work, "venv")
        site = [os.path.join(venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(venv, "lib"))][0]
        write_installed_dist(site, "bigdist", 12000)
        run = lambda *a: subprocess.run([venvtx, "--venv", venv, "-q", *a], check=True, capture_output=True)
        for step in (["remove", "sglang"], ["remove", "bigdist"], ["rollback"], ["remove", "flash-attn"],
                     ["rollback"], ["remove", "bigdist"]):
            run(*step)
        index = os.path.join(venv, ".venvtx", "index.sqlite")
        big = 6  # the last removal of bigdist: 12,000 files
        total, entries = multiply(index, args.transactions)
        print("history: %d transactions, %d entry rows (real transactions 1-6, copies after)" % (total, entries))
        peer, _ = timed(["sqlite3", index, "SELECT * FROM transactions"], args.rounds)
        print("%-34s %9s %9s" % ("median of %d runs" % args.rounds, "seconds", "vs peer"))
        print("%-34s %9.4f %8.2fx" % ("sqlite3 SELECT * FROM transactions", peer, 1.0))
        for label, cmd in (("venvtx log (all)", ["log"]), ("venvtx log -n 20", ["log", "-n", "20"]),
                           ("venvtx log --json (all)", ["--json", "log"]),
                           ("venvtx show (12,000-file tx)", ["show", str(big)])):
            seconds, out = timed([venvtx, "--venv", venv, *cmd], args.rounds)
            print("%-34s %9.4f %8.2fx" % (label, seconds, seconds / peer))
            if cmd == ["log"] and out.count("\n") < total:
                sys.exit("bench: log printed %d lines for %d transactions" % (out.count("\n"), total))
        print("goal: log of 10,000 transactions <= 0.05 s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
