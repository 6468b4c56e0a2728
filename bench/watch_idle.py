#!/usr/bin/env python3
"""Benchmark: what `venvtx watch` costs while nothing changes (issue 38's goal: < 1% CPU idle
over 60 s), on the torch-scale fixture, and against its peer in the same run: `sleep` for the
same time (a process that does nothing). CPU is the watch process's user + system time from
/proc/PID/stat; it must also record a change made after the idle stretch (it was watching).

usage: bench/watch_idle.py [--seconds S] [--venvtx PATH] [--fixture DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import REPO, torch_scale_template  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system seconds of process `pid` so far (fields 14 and 15 of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def idle_cpu(cmd, seconds, ready=None):
    """CPU seconds `cmd` used over `seconds` once started (after `ready` is set, when given)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    started = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if ready is None or line.startswith(ready):
                started.set()

    threading.Thread(target=read, daemon=True).start()
    if ready is None:
        started.set()
    if not started.wait(60):
        proc.kill()
        sys.exit("bench: %s did not start" % cmd[0])
    before = cpu_seconds(proc.pid)
    time.sleep(seconds)
    used = cpu_seconds(proc.pid) - before
    return used, proc, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--venvtx", default=os.path.join(REPO, "build", "venvtx"))
    parser.add_argument("--fixture", default=os.path.join(tempfile.gettempdir(), "venvtx-torch-scale"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="venvtx-bench-watch-")
    try:
        venv = os.path.join(work, "venv")
        subprocess.run(["cp", "-a", torch_scale_template(args.fixture), venv], check=True)
        subprocess.run([args.venvtx, "--venv", venv, "stamp"], check=True, stdout=subprocess.DEVNULL)
        used, watcher, lines = idle_cpu([args.venvtx, "--venv", venv, "watch", "--quiet-for", "0.5"], args.seconds,
                                        ready="watching ")
        peer, sleeper, _ = idle_cpu(["sleep", str(args.seconds + 5)], args.seconds)
        sleeper.kill()
        # Still watching: a dist-info made now is recorded.
        site = [os.path.join(d, "site-packages") for d in
                (os.path.join(venv, "lib", x) for x in os.listdir(os.path.join(venv, "lib")))][0]
        made = os.path.join(site, "zz_bench-1.0.dist-info")
        os.mkdir(made)
        for name, text in (("METADATA", "Metadata-Version: 2.1\nName: zz-bench\nVersion: 1.0\n"),
                           ("RECORD", "zz_bench-1.0.dist-info/METADATA,,\nzz_bench-1.0.dist-info/RECORD,,\n")):
            with open(os.path.join(made, name), "w") as f:
                f.write(text)
        deadline = time.time() + 20
        while time.time() < deadline and not any("outside venvtx" in line for line in lines):
            time.sleep(0.2)
        watcher.terminate()
        watcher.wait(timeout=20)
        if not any("outside venvtx" in line for line in lines):
            sys.exit("bench: watch did not record the change made after the idle stretch")
        share = 100.0 * used / args.seconds
        print("watch idle over %.0f s: %.3f s CPU = %.3f%% (goal < 1%%: %s); sleep, the peer: %.3f s CPU"
              % (args.seconds, used, share, "met" if share < 1.0 else "MISSED", peer))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
