"""What the benchmarks share: a timed command that must succeed, and the torch-scale fixture."""
import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_SCALE = os.path.join(REPO, "tests", "fixtures", "torch_scale.py")


def timed(cmd, env=None, cwd=None):
    """(seconds, completed process) of `cmd` after a sync; exits the bench when it fails."""
    subprocess.run(["sync"])
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("bench: %s failed (%d): %s" % (" ".join(cmd[:4]), proc.returncode, proc.stderr.strip()[-800:]))
    return elapsed, proc


def median_time(cmd, rounds, env=None):
    """The median seconds of `rounds` runs of `cmd` (no sync: warm figures); exits the bench when
    a run fails."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            sys.exit("bench: %s failed (%d): %s" % (" ".join(cmd[:5]), proc.returncode, proc.stderr.strip()[-500:]))
    return statistics.median(times)


def torch_scale_template(fixture_dir):
    """The torch-scale venv (tests/fixtures/torch_scale.py), built once into `fixture_dir`."""
    made = subprocess.run([sys.executable, TORCH_SCALE, fixture_dir], capture_output=True, text=True, check=True)
    return made.stdout.split()[-1]


def torch_scale_arguments(description, rounds):
    """The options every torch-scale bench takes: --rounds, --venvtx, --fixture, --workdir."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--venvtx", default=os.path.join(REPO, "build", "venvtx"))
    parser.add_argument("--fixture", default=os.path.join(REPO, "build", "fixtures", "torch-scale"))
    parser.add_argument("--workdir", default=None)
    return parser
