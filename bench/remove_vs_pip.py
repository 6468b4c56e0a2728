#!/usr/bin/env python3
"""Benchmark: `venvtx remove` (capture included, no probe) against `pip uninstall -y` of the same
distributions, on identical copies of a realistic GPU venv, in one run. Prints a ratio.

The venv holds nvidia-cudnn-cu13, nvidia-nccl-cu13 and nvidia-cublas laid out as pip lays them
out (files per their real RECORDs, fresh RECORD hashes, INSTALLER=pip). File contents are the
real libraries from /usr/local/cuda-13.0 when present, else synthetic files of the same sizes.

usage: bench/remove_vs_pip.py [--rounds N] [--synthetic] [--venvtx PATH] [--workdir DIR]
"""
import argparse
import base64
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CUDA = "/usr/local/cuda-13.0"
DISTS = ["nvidia_cudnn_cu13-9.19.0.56", "nvidia_nccl_cu13-2.28.9", "nvidia_cublas-13.1.0.3"]
NAMES = ["nvidia-cudnn-cu13", "nvidia-nccl-cu13", "nvidia-cublas"]
# Sizes of the real libraries, for machines without /usr/local/cuda-13.0.
FALLBACK = {
    "nvidia_cudnn_cu13-9.19.0.56": {"nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9": 245391920,
                                    "nvidia/cudnn/lib/libcudnn_adv.so.9": 109169104,
                                    "nvidia/cudnn/lib/libcudnn_heuristic.so.9": 60822040,
                                    "nvidia/cudnn/lib/libcudnn_ops.so.9": 39855888,
                                    "nvidia/cudnn/lib/libcudnn_engines_runtime_compiled.so.9": 29386400,
                                    "nvidia/cudnn/lib/libcudnn_graph.so.9": 4451728,
                                    "nvidia/cudnn/lib/libcudnn_cnn.so.9": 4203904,
                                    "nvidia/cudnn/lib/libcudnn.so.9": 129240},
    "nvidia_nccl_cu13-2.28.9": {"nvidia/nccl/lib/libnccl.so.2": 217995896},
    "nvidia_cublas-13.1.0.3": {"nvidia/cu13/lib/libcublasLt.so.13": 541595600,
                               "nvidia/cu13/lib/libcublas.so.13": 54177976,
                               "nvidia/cu13/lib/libnvblas.so.13": 737504},
}


def record_hash(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def synthetic(path, size):
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            f.write(block[:left])
            left -= len(block)


def real_files(dist):
    """RECORD path -> (source file or None, size) from the real dist-info."""
    files = {}
    with open(os.path.join(CUDA, "dist-info", dist + ".dist-info", "RECORD")) as f:
        for line in f:
            path, _, size = line.rstrip("\n").rsplit(",", 2)
            if ".dist-info/" in path:
                continue
            sub = "lib" if "/lib/" in path else "include"
            source = os.path.join(CUDA, sub, os.path.relpath(path, path.split("/" + sub + "/")[0] + "/" + sub))
            files[path] = (source if os.path.isfile(source) else None, int(size or 0))
    return files


def build_template(root, use_real):
    venv = os.path.join(root, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    subprocess.run(["cp", "-a", os.path.join(os.path.dirname(os.__file__), "site-packages", "pip"),
                    venv + "/lib/python%d.%d/site-packages/" % sys.version_info[:2]], check=True)
    site = venv + "/lib/python%d.%d/site-packages" % sys.version_info[:2]
    total = 0
    for dist in DISTS:
        files = real_files(dist) if use_real else {p: (None, s) for p, s in FALLBACK[dist].items()}
        info = os.path.join(site, dist + ".dist-info")
        os.makedirs(info)
        name, version = dist.rsplit("-", 1)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name.replace("_", "-"), version))
        with open(os.path.join(info, "INSTALLER"), "w") as f:
            f.write("pip\n")
        with open(os.path.join(info, "WHEEL"), "w") as f:
            f.write("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-manylinux_2_27_x86_64\n")
        rows = []
        for rel, (source, size) in sorted(files.items()):
            target = os.path.join(site, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if source:
                shutil.copyfile(source, target)
            else:
                synthetic(target, size)
            if rel.endswith(".so") or ".so." in rel:
                os.chmod(target, 0o755)
            total += os.path.getsize(target)
            rows.append("%s,%s,%d" % (rel, record_hash(target), os.path.getsize(target)))
        for meta in ("METADATA", "INSTALLER", "WHEEL"):
            p = os.path.join(info, meta)
            rows.append("%s/%s,%s,%d" % (dist + ".dist-info", meta, record_hash(p), os.path.getsize(p)))
        rows.append(dist + ".dist-info/RECORD,,")
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("\n".join(rows) + "\n")
    return venv, total


def timed(cmd):
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit("bench: %s failed (%d): %s" % (cmd[0], proc.returncode, proc.stderr.strip()))
    return elapsed


def listing(venv):
    """Files and symlinks (pip leaves emptied directories behind; venvtx removes them)."""
    out = set()
    for d, dirs, files in os.walk(venv):
        if d == venv:
            dirs[:] = [x for x in dirs if x != ".venvtx"]
            files = [x for x in files if x != ".lock"]
        out.update(os.path.relpath(os.path.join(d, x), venv) for x in files)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--synthetic", action="store_true", help="ignore /usr/local/cuda-13.0")
    parser.add_argument("--venvtx", default=os.path.join(os.path.dirname(__file__), "..", "build", "venvtx"))
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    use_real = not args.synthetic and os.path.isdir(os.path.join(CUDA, "dist-info"))
    work = tempfile.mkdtemp(prefix="venvtx-bench-", dir=args.workdir)
    try:
        template, total = build_template(work, use_real)
        print("venv: %s, %.0f MB in %s (%s libraries)" % (", ".join(NAMES), total / 1e6, template,
                                                          "real CUDA 13" if use_real else "synthetic"))
        ours, theirs = [], []
        for round_no in range(args.rounds):
            a, b = os.path.join(work, "a"), os.path.join(work, "b")
            for copy in (a, b):
                shutil.rmtree(copy, ignore_errors=True)
                subprocess.run(["cp", "-a", template, copy], check=True)
            runs = [("venvtx", [args.venvtx, "--venv", a, "--quiet", "remove", "--no-probe", *NAMES], ours),
                    ("pip", [b + "/bin/python", "-m", "pip", "uninstall", "-y", "-q", *NAMES], theirs)]
            if round_no % 2:
                runs.reverse()
            for _, cmd, times in runs:
                subprocess.run(["sync"])
                times.append(timed(cmd))
            if listing(a) != listing(b):
                sys.exit("bench: venvtx and pip left different trees: only venvtx: %s, only pip: %s"
                         % (sorted(listing(a) - listing(b))[:5], sorted(listing(b) - listing(a))[:5]))
        v, p = statistics.median(ours), statistics.median(theirs)
        print("%-28s %8s %8s" % ("median of %d rounds" % args.rounds, "seconds", "ratio"))
        print("%-28s %8.3f %8.2fx" % ("venvtx remove (capture)", v, v / p))
        print("%-28s %8.3f %8.2fx" % ("pip uninstall -y", p, 1.0))
        print("venvtx / pip = %.2fx (target <= 1.00x); both left the same files" % (v / p))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
