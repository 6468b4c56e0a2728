#!/usr/bin/env python3
"""Benchmark: how long a removal plan (with its shared-library impact) takes on a venv of
20,000 files, against `pip uninstall -y` of the same distribution on an identical copy.

The venv is generated: 200 distributions of 100 files each; 20 of them ship real ELF libraries
(built here with cc) that need each other through DT_NEEDED and $ORIGIN RPATHs.
usage: bench/plan_20k.py [--venvtx PATH] [--rounds N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DISTS, FILES = 200, 100


def build(root):
    venv = os.path.join(root, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    subprocess.run(["cp", "-a", os.path.join(os.path.dirname(os.__file__), "site-packages", "pip"),
                    venv + "/lib/python%d.%d/site-packages/" % sys.version_info[:2]], check=True)
    site = venv + "/lib/python%d.%d/site-packages" % sys.version_info[:2]
    src = os.path.join(root, "lib.c")
    with open(src, "w") as f:
        f.write("int venvtx_bench(void) { return 0; }\n")
    for d in range(DISTS):
        name = "pkg%03d" % d
        rows = []
        pkg = os.path.join(site, name)
        os.makedirs(os.path.join(pkg, "sub"))
        libs = d % 10 == 0
        for i in range(FILES - 3):
            rel = "%s/%s/m%03d.py" % (name, "sub" if i % 2 else "", i) if not (libs and i < 5) else \
                  "%s/lib/lib%s_%d.so.1" % (name, name, i)
            path = os.path.join(site, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if rel.endswith(".so.1"):
                needed = ["-L" + os.path.dirname(path), "-l:lib%s_%d.so.1" % (name, i - 1)] if i else []
                subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,lib%s_%d.so.1" % (name, i),
                                "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN", "-o", path, src] + needed,
                               check=True)
            else:
                with open(path, "w") as f:
                    f.write("x = %d\n" % i)
            rows.append("%s,," % rel)
        info = os.path.join(site, "%s-1.0.dist-info" % name)
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name)
        with open(os.path.join(info, "INSTALLER"), "w") as f:
            f.write("pip\n")
        rows += ["%s-1.0.dist-info/METADATA,," % name, "%s-1.0.dist-info/INSTALLER,," % name,
                 "%s-1.0.dist-info/RECORD,," % name]
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("\n".join(rows) + "\n")
    return venv


def timed(cmd):
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("bench: %s failed: %s" % (" ".join(cmd[:4]), proc.stderr.strip()))
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venvtx", default=os.path.join(os.path.dirname(__file__), "..", "build", "venvtx"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="venvtx-bench-plan-")
    try:
        venv = build(work)
        files = sum(len(f) for _, _, f in os.walk(venv))
        plan = [args.venvtx, "--venv", venv, "remove", "pkg000", "--dry-run"]
        cold = timed(plan)
        warm = statistics.median(timed(plan) for _ in range(args.rounds))
        pip = []
        for _ in range(args.rounds):
            copy = os.path.join(work, "copy")
            shutil.rmtree(copy, ignore_errors=True)
            subprocess.run(["cp", "-a", venv, copy], check=True)
            pip.append(timed([copy + "/bin/python", "-m", "pip", "uninstall", "-y", "-q", "pkg000"]))
        peer = statistics.median(pip)
        print("venv: %d files, %d distributions, %d shared libraries" % (files, DISTS, DISTS // 10 * 5))
        print("%-36s %8s %8s" % ("", "seconds", "ratio"))
        print("%-36s %8.3f %8.2fx" % ("venvtx remove --dry-run (first)", cold, cold / peer))
        print("%-36s %8.3f %8.2fx" % ("venvtx remove --dry-run (warm)", warm, warm / peer))
        print("%-36s %8.3f %8.2fx" % ("pip uninstall -y (same dist)", peer, 1.0))
        print("warm plan: %.3f s (target < 1 s)" % warm)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
