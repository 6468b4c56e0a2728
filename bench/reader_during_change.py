#!/usr/bin/env python3
"""What a process reading a package sees while the package changes under it. A reader reads
"bigpkg" (N modules, each stating the package's version) from the live venv in a loop, as an
importer holding the package's directory would (tests/fixtures/package_reader.py): every
module's version, the module count, and a dist-info present. A read is mixed when it sees two
versions, the wrong count or no dist-info, and failed when a file vanishes under it or is not
whole. It reads while plain pip upgrades the package, while venvtx upgrades it (previewed,
probed), rolls the upgrade back (without and with a probe), and restores a failing in-place
upgrade (counted from the failing probe on: the in-place install itself is pip's). Prints, per
operation, the reads made wholly inside it and how many were mixed or failed.

usage: bench/reader_during_change.py [--modules N] [--venvtx PATH]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

READER = os.path.join(REPO, "tests", "fixtures", "package_reader.py")


def fixture():
    spec = importlib.util.spec_from_file_location("make_story_venv",
                                                  os.path.join(REPO, "tests", "fixtures", "make_story_venv.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_wheels(wheels, modules):
    for version, init in (("1.0", ""), ("2.0", ""), ("3.0", "raise ImportError('bigpkg 3.0 is broken')\n")):
        files = {"bigpkg/__init__.py": init}
        for i in range(modules):
            files["bigpkg/m%05d.py" % i] = 'VERSION = "%s"\n' % version
        fixture().write_wheel(wheels, "bigpkg", version, "py3-none-any", files, top_level=["bigpkg"])


def site_packages(venv):
    lib = os.path.join(venv, "lib")
    return os.path.join(lib, [d for d in os.listdir(lib) if d.startswith("python")][0], "site-packages")


def with_reader(venv, modules, operation, marks=None):
    """(reads wholly inside the operation, mixed, failed, seconds it took, seconds from the first
    broken read to the last) while `operation()` runs. A broken package is read faster than a
    whole one (a file or the directory is missing), so the counts weigh the broken stretch."""
    work = tempfile.mkdtemp(prefix="reader-")
    stop, out = os.path.join(work, "stop"), os.path.join(work, "reads")
    reader = subprocess.Popen([sys.executable, READER, site_packages(venv), str(modules), stop, out])
    time.sleep(1.0)  # a few reads of the whole package first
    start = time.time()
    operation()
    end = time.time()
    time.sleep(0.5)
    open(stop, "w").close()
    reader.wait()
    if marks:  # from the last probe run on: the restore
        with open(marks) as lines:
            start = max(float(line) for line in lines)
    inside = [line.split() for line in open(out) if start <= float(line.split()[0]) and float(line.split()[1]) <= end]
    broken = [(float(r[0]), float(r[1])) for r in inside if r[2] != "ok"]
    stretch = broken[-1][1] - broken[0][0] if broken else 0.0
    return (len(inside), sum(r[2] == "mixed" for r in inside), sum(r[2] == "failed" for r in inside), end - start,
            stretch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=3000)
    parser.add_argument("--venvtx", default=os.path.join(REPO, "build", "venvtx"))
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="venvtx-reader-bench-")
    wheels = os.path.join(root, "wheels")
    os.makedirs(wheels)
    make_wheels(wheels, args.modules)
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
    template = os.path.join(root, "template")
    subprocess.run([sys.executable, "-m", "venv", template], check=True)
    subprocess.run([os.path.join(template, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--find-links", wheels, "bigpkg==1.0"], check=True, env=env)

    def venv(name):
        path = os.path.join(root, name)
        subprocess.run(["cp", "-a", template, path], check=True)
        return path

    def pip(path, version):
        return lambda: subprocess.run([os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                                       "--find-links", wheels, "bigpkg==" + version], check=True, env=env)

    def venvtx(path, *argv, code=0):
        def run():
            proc = subprocess.run([args.venvtx, "--venv", path, "-q", *argv], capture_output=True, text=True, env=env)
            if proc.returncode != code:
                raise SystemExit("venvtx %s: exit %d\n%s" % (" ".join(argv), proc.returncode, proc.stderr))
        return run

    probe = ["--probe", "import bigpkg"]
    wheel_args = ["--", "--no-index", "--find-links", wheels]
    rows = []
    plain = venv("pip")
    rows.append(("pip install (upgrade)", with_reader(plain, args.modules, pip(plain, "2.0"))))
    managed = venv("venvtx")
    rows.append(("venvtx install (previewed, probed)",
                 with_reader(managed, args.modules, venvtx(managed, "install", *probe, "bigpkg==2.0", *wheel_args))))
    rows.append(("venvtx rollback", with_reader(managed, args.modules, venvtx(managed, "rollback"))))
    venvtx(managed, "install", "bigpkg==2.0", *wheel_args)()
    rows.append(("venvtx rollback --probe", with_reader(managed, args.modules, venvtx(managed, "rollback", *probe))))
    failing = venv("failing")
    marks = os.path.join(root, "probe-marks")
    marking = ["--probe", "import time; open(%r, 'a').write('%%f\\n' %% time.time()); import bigpkg" % marks]
    rows.append(("venvtx install, failing in place (restore)",
                 with_reader(failing, args.modules, venvtx(failing, "install", "--preview", "never", *marking,
                                                           "bigpkg==3.0", *wheel_args, code=3), marks)))
    print("reader of a %d-module package, reads wholly inside each operation:" % args.modules)
    print("%-44s %6s %6s %6s %8s %9s" % ("operation", "reads", "mixed", "failed", "seconds", "broken s"))
    for name, (reads, mixed, failed, seconds, stretch) in rows:
        print("%-44s %6d %6d %6d %8.2f %9.2f" % (name, reads, mixed, failed, seconds, stretch))
    print(json.dumps({name: {"reads": r, "mixed": m, "failed": f, "seconds": round(t, 2), "broken_s": round(b, 2)}
                      for name, (r, m, f, t, b) in rows}))


if __name__ == "__main__":
    main()
