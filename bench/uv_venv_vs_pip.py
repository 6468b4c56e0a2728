#!/usr/bin/env python3
"""Benchmark: removing from a uv-installed venv, venvtx against `pip uninstall`, in one run.

uv installs by hard link from its cache (its default on Linux): every file of the venv has a
second name under UV_CACHE_DIR/archive-v0/<id>/. This takes the torch-scale fixture
(tests/fixtures/torch_scale.py, whose INSTALLER files say uv), copies it twice per round, and
lays each copy out as uv does: every file of every distribution hard-linked from its own
archive-v0/<id>/ under a cache beside the copy. Then, per round:

- `venvtx remove` of the four nvidia-*-cu13 wheels (no probe) vs `pip uninstall -y` of the same
  on the other copy (venvtx and pip alternate who runs first); the ratio's goal is <= 0.5x;
- the store's growth: bytes of store files that are not uv's cache entries (the index included),
  against the bytes removed; the goal is <= 1%;
- `venvtx rollback`, checked: every removed path is back as the very inode the cache holds
  (same inode number, size and mtime), and no other path changed.

usage: bench/uv_venv_vs_pip.py [--rounds N] [--venvtx PATH] [--fixture DIR] [--workdir DIR]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import timed, torch_scale_arguments, torch_scale_template  # noqa: E402

CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]


def site_packages(venv):
    lib = os.path.join(venv, "lib")
    return [os.path.join(lib, d, "site-packages") for d in os.listdir(lib) if d.startswith("python")][0]


def uv_shaped_copy(template, path, cache):
    """A copy of the template whose every uv-installed distribution's files are hard links from
    cache/archive-v0/<id>/, as `uv pip install` (link mode hardlink) leaves them."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", template, path], check=True)
    site = site_packages(path)
    for number, name in enumerate(sorted(os.listdir(site))):
        if not name.endswith(".dist-info"):
            continue
        with open(os.path.join(site, name, "INSTALLER")) as f:
            if f.read().strip() != "uv":
                continue  # the venv's own pip (ensurepip): not uv's
        archive = os.path.join(cache, "archive-v0", "B%06dxYz" % number)
        with open(os.path.join(site, name, "RECORD")) as f:
            for line in f:
                rel = line.rsplit(",", 2)[0]
                source = os.path.normpath(os.path.join(site, rel))
                if os.path.isfile(source) and not os.path.islink(source) and os.lstat(source).st_nlink == 1:
                    # scripts and data sit outside site-packages (../../../bin/x): in the
                    # archive they are the wheel's <name>.data/ tree
                    inside = rel if not rel.startswith("..") else os.path.join("data", rel.replace("../", ""))
                    target = os.path.join(archive, inside)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    os.link(source, target)
    return path


def inode_facts(venv):
    """path -> (inode, size, mtime_ns, nlink) of every file and link, venvtx's own aside."""
    facts = {}
    for d, dirs, files in os.walk(venv):
        if d == venv:
            dirs[:] = [x for x in dirs if x != ".venvtx"]
            files = [x for x in files if x != ".lock"]
        for name in files:
            path = os.path.join(d, name)
            st = os.lstat(path)
            facts[os.path.relpath(path, venv)] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_nlink)
    return facts


def store_growth(store, cache):
    """Bytes of files under the store that are not one of the cache's inodes."""
    cached = {os.lstat(os.path.join(d, f)).st_ino for d, _, files in os.walk(cache) for f in files}
    total = 0
    for d, _, files in os.walk(store):
        for name in files:
            st = os.lstat(os.path.join(d, name))
            if st.st_ino not in cached:
                total += st.st_size
    return total


def main():
    parser = torch_scale_arguments(__doc__.splitlines()[0], rounds=3)
    args = parser.parse_args()
    venvtx = os.path.abspath(args.venvtx)
    template = torch_scale_template(args.fixture)
    work = tempfile.mkdtemp(prefix="venvtx-uv-", dir=args.workdir)
    ours, theirs, growth, removed_bytes = [], [], [], 0
    try:
        for round_no in range(args.rounds):
            a = uv_shaped_copy(template, os.path.join(work, "a"), os.path.join(work, "cache-a"))
            b = uv_shaped_copy(template, os.path.join(work, "b"), os.path.join(work, "cache-b"))
            before = inode_facts(a)
            env = dict(os.environ, UV_CACHE_DIR=os.path.join(work, "cache-a"))
            runs = [("venvtx", [venvtx, "--venv", a, "--quiet", "remove", "--no-probe", *CU13]),
                    ("pip", [b + "/bin/python", "-m", "pip", "uninstall", "-y", "-q", *CU13])]
            for who, cmd in runs if round_no % 2 == 0 else reversed(runs):
                (ours if who == "venvtx" else theirs).append(timed(cmd, env)[0])
            after = inode_facts(a)
            removed = set(before) - set(after)
            removed_bytes = sum(before[p][1] for p in removed)
            growth.append(store_growth(os.path.join(a, ".venvtx"), os.path.join(work, "cache-a")))
            timed([venvtx, "--venv", a, "--quiet", "rollback"], env)
            back = inode_facts(a)
            if back != before:
                changed = sorted(p for p in set(before) | set(back) if before.get(p) != back.get(p))
                sys.exit("bench: the rollback is not exact: %d path(s) differ, e.g. %s" % (len(changed), changed[:3]))
        v, p = statistics.median(ours), statistics.median(theirs)
        g = max(growth)
        print("uv-shaped torch-scale venv, %d round(s); removed %d bytes in the four cu13 wheels" % (args.rounds, removed_bytes))
        print("%-34s %9.3f s vs pip uninstall %9.3f s  %6.2fx <= 0.5x%s"
              % ("remove the four cu13", v, p, v / p, "" if v / p <= 0.5 else "  MISSED"))
        print("%-34s %9d bytes = %.4f%% of the removed bytes <= 1%%%s"
              % ("store growth (largest)", g, 100.0 * g / removed_bytes, "" if g <= removed_bytes / 100 else "  MISSED"))
        print("%-34s exact in every round (same inodes, sizes, mtimes, link counts)" % "rollback")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
