#!/usr/bin/env python3
"""Benchmark: what it costs that every recorded state holds its files (issue 38), on the
torch-scale fixture (tests/fixtures/torch_scale.py: ~49,000 files, built once and reused), with
its peers run in the same round on identical copies. Prints each figure and its goal:

- the first hold: `venvtx -v stamp` on a copy venvtx has not seen (the hold's own time, from -v,
  and the whole command's) against `cp -al` of the same tree (one hard link per file, the cheapest
  way to give every file a second name); goals: the hold <= 1.0 s and <= 0.5x `cp -al`;
- the floor under any hold: one more name for each file and nothing else (os.link into flat
  directories, one per thread, on 2 threads; nothing read, nothing recorded), against the same
  `cp -al`: where the floor is above 0.5x, no hold made of links can meet that goal;
- a later command's hold when nothing changed (`stamp` again: the hold's own time and the whole
  command's); goal: <= 50 ms;
- what the store costs on disk beyond the venv after the first hold (the inodes under the store
  the venv does not name too, a hold being a second name of a venv file, and the index); goal:
  <= 1% of the venv's bytes (their apparent size: the fixture's libraries are sparse files, a
  real venv's are not; the share of the fixture's blocks is printed too);
- the rollback of a plain `pip uninstall -y torch` (files from the holds) against `pip install
  --no-index --no-deps --no-compile` of the same torch from its wheel (pip's fastest install);
  goal: <= 0.3x. Both must leave the same tree.

Medians over --rounds.

usage: bench/holds_vs_cp.py [--rounds N] [--venvtx PATH] [--fixture DIR] [--workdir DIR]
"""
import concurrent.futures
import hashlib
import os
import re
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import REPO, timed, torch_scale_arguments, torch_scale_template  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from support import store_growth  # noqa: E402  what the store costs beyond the venv


def held_ms(stderr):
    """The hold's own time as -v says it ("held N files of M distributions in X ms"); 0 when
    nothing was new to hold."""
    found = re.search(r"held (\d+) files? of (\d+) distributions? in ([0-9.]+) ms", stderr)
    return (float(found.group(3)), int(found.group(1))) if found else (0.0, 0)


def tree(root):
    """path -> (mode, sha256) of every file outside the store, bytecode aside: the bench's own."""
    found = {}
    for d, dirs, files in os.walk(root):
        if d == root:
            dirs[:] = [x for x in dirs if x != ".venvtx"]
            files = [x for x in files if x != ".lock"]
        if os.path.basename(d) == "__pycache__":
            continue
        for name in files:
            path = os.path.join(d, name)
            st = os.lstat(path)
            if os.path.islink(path):
                found[os.path.relpath(path, root)] = ("link", os.readlink(path))
                continue
            with open(path, "rb") as data:
                found[os.path.relpath(path, root)] = (st.st_mode, hashlib.sha256(data.read()).hexdigest())
    return found


def venv_bytes(venv):
    """(bytes on disk, apparent bytes) of the venv's files: the fixture's large libraries are
    sparse, so a real venv of that shape occupies its apparent size."""
    blocks = apparent = 0
    for d, dirs, files in os.walk(venv):
        if d == venv:
            dirs[:] = [x for x in dirs if x != ".venvtx"]
        for name in files:
            st = os.lstat(os.path.join(d, name))
            blocks += st.st_blocks * 512
            apparent += st.st_size
    return blocks, apparent


def store_cost(venv):
    """What the store costs beyond the venv, its index included (store_growth leaves it out)."""
    store = os.path.join(venv, ".venvtx")
    index = sum(os.lstat(os.path.join(store, name)).st_blocks * 512 for name in os.listdir(store)
                if name.startswith("index.sqlite"))
    return store_growth(venv) + index


def bare_links(root, into, threads=2):
    """Seconds to give each regular file under `root` one more name in flat directories under
    `into`, one directory per thread (the files listed beforehand, untimed)."""
    files = [os.path.join(d, name) for d, _, names in os.walk(root) for name in names]
    files = [path for path in files if stat.S_ISREG(os.lstat(path).st_mode)]
    dirs = [os.path.join(into, str(n)) for n in range(threads)]
    for d in [into] + dirs:
        os.mkdir(d)

    def link_share(n):
        for i in range(n, len(files), threads):
            os.link(files[i], os.path.join(dirs[n], "%x" % i))

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(link_share, range(threads)))
    return time.perf_counter() - started


def main():
    args = torch_scale_arguments(__doc__.splitlines()[1], 3).parse_args()
    template = torch_scale_template(args.fixture)
    wheels = os.path.join(args.fixture, "wheels")
    work = tempfile.mkdtemp(prefix="venvtx-bench-holds-", dir=args.workdir)
    results = {}
    try:
        for round_no in range(args.rounds):
            venv, peer = os.path.join(work, "venv"), os.path.join(work, "peer")
            for path in (venv, peer):
                shutil.rmtree(path, ignore_errors=True)
                subprocess.run(["cp", "-a", "--sparse=always", template, path], check=True)
            python = os.path.join(peer, "bin", "python")
            runs = [("cp -al", lambda: timed(["cp", "-al", peer, os.path.join(work, "linked")])),
                    ("first stamp", lambda: timed([args.venvtx, "--venv", venv, "-v", "stamp"])),
                    ("bare links", lambda: (bare_links(peer, os.path.join(work, "bare")), None))]
            for label, run in runs[round_no % 3:] + runs[:round_no % 3]:
                seconds, proc = run()
                results.setdefault(label, []).append(seconds)
                if label == "first stamp":
                    ms, files = held_ms(proc.stderr)
                    results.setdefault("first hold", []).append(ms / 1000)
                    results["held files"] = files
            for made in ("linked", "bare"):
                shutil.rmtree(os.path.join(work, made))
            blocks, apparent = venv_bytes(venv)
            results.setdefault("growth", []).append(store_cost(venv) / apparent)
            results.setdefault("growth of blocks", []).append(store_cost(venv) / blocks)
            seconds, proc = timed([args.venvtx, "--venv", venv, "-v", "stamp"])
            results.setdefault("later stamp", []).append(seconds)
            results.setdefault("later hold", []).append(held_ms(proc.stderr)[0] / 1000)
            # the incident: a plain pip uninstall of torch, undone from the holds; pip's install of
            # the same wheel on the other copy, after the same uninstall
            before = tree(venv)
            for copy in (venv, peer):
                timed([os.path.join(copy, "bin", "python"), "-m", "pip", "uninstall", "-q", "-y", "torch"])
            install = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                       "--find-links", wheels, "torch==2.11.0"]
            runs = [("rollback", lambda: timed([args.venvtx, "--venv", venv, "--quiet", "rollback"])),
                    ("pip install", lambda: timed(install))]
            for label, run in runs[round_no % 2:] + runs[:round_no % 2]:
                results.setdefault(label, []).append(run()[0])
            if tree(venv) != before:
                sys.exit("bench: the rollback did not bring back the tree venvtx held")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {label: statistics.median(values) for label, values in results.items() if isinstance(values, list)}
    print("holds on the torch-scale fixture (%d files held), medians of %d round(s):" % (results["held files"], args.rounds))
    print("  first hold            %7.3f s (stamp %.3f s)  cp -al %7.3f s  ratio %.2fx  goal <= 1.0 s, <= 0.5x"
          % (med["first hold"], med["first stamp"], med["cp -al"], med["first hold"] / med["cp -al"]))
    print("  floor: links alone   %7.3f s (2 threads)     cp -al %7.3f s  ratio %.2fx"
          % (med["bare links"], med["cp -al"], med["bare links"] / med["cp -al"]))
    print("  later hold            %7.1f ms (stamp %.1f ms)  goal <= 50 ms"
          % (med["later hold"] * 1000, med["later stamp"] * 1000))
    print("  store growth          %7.3f %% of the venv's bytes, index included  goal <= 1%%  (%.1f %% of the "
          "sparse fixture's blocks)" % (med["growth"] * 100, med["growth of blocks"] * 100))
    print("  rollback of pip uninstall torch  %7.3f s  pip install %7.3f s  ratio %.2fx  goal <= 0.3x"
          % (med["rollback"], med["pip install"], med["rollback"] / med["pip install"]))


if __name__ == "__main__":
    main()
