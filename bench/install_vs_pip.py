#!/usr/bin/env python3
"""Benchmark: `venvtx install` (capture included, no probe) against plain `pip install` of the
same local wheels into identical venvs, in one run; prints the ratios (auto capture,
and --capture touch|link) and how much the store grew against the bytes the upgrade replaced.
Each venvtx venv is one venvtx already knows (`venvtx stamp`, untimed, before the round, and
again 2 s later): its files are held, and its state is read from the index, as for any command
long after the one before. One more row times the first venvtx
command a venv ever sees, which makes the store and holds every file once (the first hold).

The venv is the story venv (torch 2.11.0 + nvidia-*-cu13 + sglang, flashinfer, flash-attn,
built by tests/fixtures/make_story_venv.py) padded with 20,000 small files in 100 extra
distributions, as large GPU venvs are (--pad 0: the story venv alone); the install upgrades torch
to 2.12.0. With --package-files N the install instead upgrades "bigpkg" 1.0 -> 2.0, a wheel of N
files in nested packages (a real torch wheel holds about 15,000): every one is removed and
written anew.
With --library-mb N, torch 2.11's libtorch_cuda.so weighs N MB (random bytes, its RECORD line
made to match), as a real one does: what the upgrade moves out then costs bytes, not only paths.
--baseline OLD: an older venvtx build installs too (auto capture), on a fifth copy in the same
round, and a line prints venvtx / baseline.
--dirty-mb N: just before each row, another process leaves N MB written and not yet flushed on
the venvs' filesystem (a training job's checkpoint, a download), deleted after the row.
usage: bench/install_vs_pip.py [--rounds N] [--pad FILES] [--package-files N] [--library-mb N]
                               [--venvtx PATH] [--baseline PATH] [--dirty-mb N]
"""
import argparse
import base64
import hashlib
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def pad(venv, total):
    dists, files = max(total // 200, 0), 200
    site = [os.path.join(venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(venv, "lib"))][0]
    for d in range(dists):
        name = "pad%03d" % d
        rows = []
        for i in range(files - 3):
            rel = "%s/m%03d.py" % (name, i)
            os.makedirs(os.path.join(site, name), exist_ok=True)
            with open(os.path.join(site, rel), "w") as f:
                f.write("x = %d\n" % i)
            rows.append(rel + ",,")
        info = os.path.join(site, name + "-1.0.dist-info")
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name)
        rows += [name + "-1.0.dist-info/METADATA,,", name + "-1.0.dist-info/RECORD,,"]
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("\n".join(rows) + "\n")


def weigh_library(venv, megabytes):
    """torch's libtorch_cuda.so made `megabytes` MB of random bytes, its RECORD line to match."""
    site = [os.path.join(venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(venv, "lib"))][0]
    rel = "torch/lib/libtorch_cuda.so"
    with open(os.path.join(site, rel), "wb") as f:
        for _ in range(megabytes):
            f.write(os.urandom(1 << 20))
    with open(os.path.join(site, rel), "rb") as f:
        digest = hashlib.file_digest(f, "sha256").digest()
    line = "%s,sha256=%s,%d" % (rel, base64.urlsafe_b64encode(digest).rstrip(b"=").decode(), megabytes << 20)
    record = os.path.join(site, "torch-2.11.0.dist-info", "RECORD")
    with open(record) as f:
        rows = [line if row.startswith(rel + ",") else row for row in f.read().splitlines()]
    with open(record, "w") as f:
        f.write("\n".join(rows) + "\n")


def big_wheels(work, files):
    """bigpkg 1.0 and 2.0, `files` modules each, in work/wheels-big/; returns that directory."""
    sys.path.insert(0, os.path.join(REPO, "tests", "fixtures"))
    from make_story_venv import write_wheel
    out = os.path.join(work, "wheels-big")
    os.makedirs(out, exist_ok=True)
    for version in ("1.0", "2.0"):
        modules = {"bigpkg/__init__.py": "VERSION = %r\n" % version}
        for i in range(files - 1):
            modules["bigpkg/sub%02d/m%05d.py" % (i % 50, i)] = "x = %d  # %s\n" % (i, version)
        for sub in range(min(50, files - 1)):
            modules["bigpkg/sub%02d/__init__.py" % sub] = ""
        write_wheel(out, "bigpkg", version, "py3-none-any", modules, top_level=["bigpkg"])
    return out


def leave_dirty(path, megabytes):
    """`megabytes` MB written to `path` and left unflushed, as another process's."""
    block = b"\x5a" * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(megabytes):
            f.write(block)


def timed(cmd, env):
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit("bench: %s failed (%d): %s" % (" ".join(cmd[:3]), proc.returncode, proc.stderr.strip()[-400:]))
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pad", type=int, default=20000, help="extra small files (default 20000)")
    parser.add_argument("--package-files", type=int, default=0,
                        help="upgrade a package of this many files instead of torch")
    parser.add_argument("--library-mb", type=int, default=0, help="torch's libtorch_cuda.so weighs this many MB")
    parser.add_argument("--venvtx", default=os.path.join(REPO, "build", "venvtx"))
    parser.add_argument("--baseline", help="an older venvtx build to run beside --venvtx")
    parser.add_argument("--dirty-mb", type=int, default=0,
                        help="before each row, leave this many MB unflushed on the venvs' filesystem")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="venvtx-bench-install-")
    dirty = os.path.join(work, "someone-elses.bin")  # --dirty-mb's file, beside the venvs
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    try:
        subprocess.run([sys.executable, os.path.join(REPO, "tests", "fixtures", "make_story_venv.py"), work,
                        "--extra-wheels"], check=True, stdout=subprocess.DEVNULL)
        template = os.path.join(work, "venv")
        pad(template, args.pad)
        if args.library_mb:
            weigh_library(template, args.library_mb)
        files = sum(len(f) for _, _, f in os.walk(template))
        links = ["--no-index", "--find-links", os.path.join(work, "wheels"),
                 "--find-links", os.path.join(work, "wheels-extra")]
        spec, what = "torch==2.12.0", "torch 2.11.0 -> 2.12.0" + (
            " (its libtorch_cuda.so %d MB)" % args.library_mb if args.library_mb else "")
        if args.package_files:
            big = big_wheels(work, args.package_files)
            links += ["--find-links", big]
            subprocess.run([os.path.join(template, "bin", "python"), "-m", "pip", "install", "-q", "bigpkg==1.0",
                            *links], check=True, env=env)
            files = sum(len(f) for _, _, f in os.walk(template))
            spec, what = "bigpkg==2.0", "bigpkg 1.0 -> 2.0 (%d files each)" % args.package_files
        ours, touched, linked, theirs, older, first, growth, replaced = [], [], [], [], [], [], [], []
        for round_no in range(args.rounds):
            a, b, c, d, e, f = (os.path.join(work, x) for x in "abcdef")
            for copy in (a, b, c, d, e, f) if args.baseline else (a, b, c, d, f):
                shutil.rmtree(copy, ignore_errors=True)
                subprocess.run(["cp", "-a", template, copy], check=True)
            # Known for a while: stamped (its first hold links every file, which moves each
            # dist-info's ctime), then seen by a second command once those are two seconds old,
            # which reads the state from the index again (a dist-info changed within 2 s is read
            # anew: whole-second filesystems), as any command long after the one before.
            for stamping in range(2):
                if stamping:
                    time.sleep(2.1)
                for tool, copy in [(args.venvtx, a), (args.venvtx, c), (args.venvtx, d)] + \
                                  ([(args.baseline, e)] if args.baseline else []):
                    subprocess.run([tool, "--venv", copy, "--quiet", "stamp"], check=True, env=env,
                                   stdout=subprocess.DEVNULL)
            # Flush the copies: venvtx's first fsync would otherwise write back the benchmark's
            # own 100 MB of cp, which pip (never syncing) does not pay for.
            os.sync()
            runs = [([args.venvtx, "--venv", a, "--quiet", "install", "--installer", "pip", spec,
                      "--", "-q", *links], ours),
                    ([args.venvtx, "--venv", c, "--quiet", "install", "--capture", "link", "--installer", "pip",
                      spec, "--", "-q", *links], linked),
                    ([args.venvtx, "--venv", d, "--quiet", "install", "--capture", "touch", "--installer", "pip",
                      spec, "--", "-q", *links], touched),
                    ([args.venvtx, "--venv", f, "--quiet", "install", "--installer", "pip", spec,
                      "--", "-q", *links], first),
                    ([b + "/bin/python", "-m", "pip", "install", "-q", spec, *links], theirs)]
            if args.baseline:
                runs.insert(2, ([args.baseline, "--venv", e, "--quiet", "install", "--installer", "pip", spec,
                                 "--", "-q", *links], older))
            # Turns rotate a place each round: no row is always first after the sync of the copies.
            turn = round_no % len(runs)
            runs = runs[turn:] + runs[:turn]
            for cmd, times in runs:
                if args.dirty_mb:
                    leave_dirty(dirty, args.dirty_mb)
                times.append(timed(cmd, env))
                if args.dirty_mb:
                    os.unlink(dirty)
            objects = os.path.join(a, ".venvtx", "objects")
            growth.append(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(objects) for f in fs))
            with sqlite3.connect(os.path.join(a, ".venvtx", "index.sqlite")) as db:
                replaced.append(db.execute("SELECT COALESCE(SUM(before_size), 0) FROM entries "
                                           "WHERE before_type = 'file' AND after_type != 'file' OR "
                                           "(before_type = 'file' AND after_type = 'file')").fetchone()[0])
        v, t, l, p = (statistics.median(x) for x in (ours, touched, linked, theirs))
        print("venv: %d files; upgrade %s from local wheels%s" % (
            files, what, "; %d MB of another process's writes unflushed before each row" % args.dirty_mb
            if args.dirty_mb else ""))
        print("%-32s %8s %8s" % ("median of %d rounds" % args.rounds, "seconds", "ratio"))
        print("(venvtx rows: a venv venvtx knows, stamped before; the last: the first command in a new one)")
        print("%-32s %8.3f %8.2fx" % ("venvtx install (auto capture)", v, v / p))
        print("%-32s %8.3f %8.2fx" % ("venvtx install --capture touch", t, t / p))
        print("%-32s %8.3f %8.2fx" % ("venvtx install --capture link", l, l / p))
        print("%-32s %8.3f %8.2fx" % ("pip install", p, 1.0))
        w = statistics.median(first)
        print("%-32s %8.3f %8.2fx" % ("venvtx install, first command", w, w / p))
        if older:
            o = statistics.median(older)
            print("%-32s %8.3f %8.2fx" % ("baseline install (auto capture)", o, o / p))
            print("venvtx / baseline = %.2fx" % (v / o))
        print("venvtx / pip = %.2fx (target <= 1.10x)" % (v / p))
        print("store grew by %d bytes; the upgrade replaced or removed %d bytes (target: growth <= replaced)"
              % (max(growth), min(replaced)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
