#!/usr/bin/env python3
"""Benchmark: packs on the real-library venv of bench/remove_vs_pip.py (nvidia-cudnn-cu13,
nvidia-nccl-cu13, nvidia-cublas: 1.3 GB of real CUDA 13 libraries), in one run:
  - pack size and time (`venvtx gc --loose 0` after removing the three) against
    `tar --zstd -cf` of the same object files;
  - a rollback of that removal from packs, against a rollback from loose objects and against
    `pip install --no-index` of the same three distributions from local wheels (deflate, as
    real wheels are) into an identical copy.

usage: bench/packs_vs_tar.py [--rounds N] [--synthetic] [--venvtx PATH] [--workdir DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remove_vs_pip  # noqa: E402  (the venv builder)


def timed(cmd, cwd=None):
    subprocess.run(["sync"])
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("bench: %s failed (%d): %s" % (" ".join(cmd[:4]), proc.returncode, proc.stderr.strip()[-500:]))
    return elapsed


def site_of(venv):
    return venv + "/lib/python%d.%d/site-packages" % sys.version_info[:2]


def make_wheels(template, out):
    """One wheel per distribution, built from the installed files and RECORD, deflated."""
    os.makedirs(out)
    site = site_of(template)
    for dist in remove_vs_pip.DISTS:
        info = dist + ".dist-info"
        name, version = dist.rsplit("-", 1)
        wheel = os.path.join(out, "%s-%s-py3-none-manylinux_2_27_x86_64.whl" % (name, version))
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
            with open(os.path.join(site, info, "RECORD")) as record:
                for line in record:
                    rel = line.rsplit(",", 2)[0]
                    if rel and os.path.isfile(os.path.join(site, rel)):
                        archive.write(os.path.join(site, rel), rel)


def tree(venv):
    return sorted(remove_vs_pip.listing(venv))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--synthetic", action="store_true", help="ignore /usr/local/cuda-13.0")
    parser.add_argument("--venvtx", default=os.path.join(os.path.dirname(__file__), "..", "build", "venvtx"))
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    venvtx = os.path.abspath(args.venvtx)
    use_real = not args.synthetic and os.path.isdir(os.path.join(remove_vs_pip.CUDA, "dist-info"))
    work = tempfile.mkdtemp(prefix="venvtx-bench-packs-", dir=args.workdir)
    try:
        template, total = remove_vs_pip.build_template(work, use_real)
        wheels = os.path.join(work, "wheels")
        make_wheels(template, wheels)
        print("venv: %s, %.0f MB (%s libraries); wheels: %.0f MB" % (
            ", ".join(remove_vs_pip.NAMES), total / 1e6, "real CUDA 13" if use_real else "synthetic",
            sum(os.path.getsize(os.path.join(wheels, w)) for w in os.listdir(wheels)) / 1e6))
        results = {k: [] for k in ("pack", "tar", "pack_bytes", "tar_bytes", "from_packs", "from_loose", "pip")}
        for _ in range(args.rounds):
            copies = {k: os.path.join(work, k) for k in ("packed", "loose", "pip")}
            for copy in copies.values():
                shutil.rmtree(copy, ignore_errors=True)
                subprocess.run(["cp", "-a", template, copy], check=True)
            before = tree(copies["packed"])
            for copy in ("packed", "loose"):
                timed([venvtx, "--venv", copies[copy], "-q", "remove", "--no-probe", *remove_vs_pip.NAMES])
            store = os.path.join(copies["packed"], ".venvtx")
            tarball = os.path.join(work, "objects.tar.zst")
            if os.path.exists(tarball):
                os.unlink(tarball)
            results["tar"].append(timed(["tar", "--zstd", "-cf", tarball, "-C", os.path.join(store, "objects"), "."]))
            results["tar_bytes"].append(os.path.getsize(tarball))
            results["pack"].append(timed([venvtx, "--venv", copies["packed"], "-q", "gc", "--loose", "0"]))
            results["pack_bytes"].append(sum(os.path.getsize(os.path.join(store, "packs", p))
                                             for p in os.listdir(os.path.join(store, "packs"))))
            results["from_packs"].append(timed([venvtx, "--venv", copies["packed"], "-q", "rollback"]))
            results["from_loose"].append(timed([venvtx, "--venv", copies["loose"], "-q", "rollback"]))
            subprocess.run([copies["pip"] + "/bin/python", "-m", "pip", "uninstall", "-y", "-q",
                            *remove_vs_pip.NAMES], check=True)
            results["pip"].append(timed([copies["pip"] + "/bin/python", "-m", "pip", "install", "-q", "--no-index",
                                         "--no-deps", "--find-links", wheels, *remove_vs_pip.NAMES]))
            for copy in ("packed", "loose"):
                if tree(copies[copy]) != before:
                    sys.exit("bench: the rollback (%s) did not bring back the same files" % copy)
        m = {k: statistics.median(v) for k, v in results.items()}
        print("median of %d rounds" % args.rounds)
        print("  pack size   %8.1f MB vs tar --zstd %8.1f MB: %.3fx (goal <= 1.0x)" % (
            m["pack_bytes"] / 1e6, m["tar_bytes"] / 1e6, m["pack_bytes"] / m["tar_bytes"]))
        print("  pack time   %8.2f s  vs tar --zstd %8.2f s : %.2fx (goal <= 1.0x; gc --loose 0, whole command)" % (
            m["pack"], m["tar"], m["pack"] / m["tar"]))
        print("  rollback from packs %6.2f s vs from loose objects %6.2f s: %.2fx" % (
            m["from_packs"], m["from_loose"], m["from_packs"] / m["from_loose"]))
        print("  rollback from packs %6.2f s vs pip install of the wheels %6.2f s: %.2fx (goal <= 0.5x)" % (
            m["from_packs"], m["pip"], m["from_packs"] / m["pip"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
