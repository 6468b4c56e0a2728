"""Model-based test: random sequences of venvtx operations (remove, install, run, rollback,
rollback --to, rollback --redo), changes made behind venvtx's back with plain pip, and kill -9
at a random mutating step (VENVTX_FAILPOINT) followed by `venvtx recover`, against a real venv.
After every step the venv's tree (support.tree_hash, normalised for the venv's own path) and
`venvtx --json log` must be what a small pure-Python model says they should be.

The model knows which version of each of three test distributions (alpha, beta, gamma) is
installed and the list of transactions (id, kind, state, undone_by, what each changed). The tree
it expects is computed, not recorded: the base venv plus, for every installed distribution, the
files that a clean pip install of that version adds (measured once per process). Its rules:
`rollback` undoes the newest committed, not undone, non-rollback transaction; `--to T` every
such one after entry T (0: all) as one rollback; `--redo` undoes the newest committed, not
undone rollback that undid a non-rollback transaction (a redo is not itself redoable; it commits
again every transaction that rollback undid). `rollback` whose newest change was made outside
venvtx undoes that change from the files every recorded state holds, and `--to T` across one
lands in T's distributions the same way (one rollback undoing every entry after T, outside
ones too; no drift refusal: what is there is captured); with the store on another filesystem
nothing is held, and such a rollback may instead be refused as before: `rollback` (exit 2),
`--to T` that would not land in T's distributions (exit 2). One with nothing to undo that is
there already succeeds (exit 0). A rollback or redo whose distributions no longer
are what the undone transactions left (drift) is refused before anything changes, exit 6; where
pip rewrote the same version outside venvtx, refusing and proceeding are both accepted. A kill
leaves exactly the before-state (the transaction rolled back, or never journaled) or the
after-state (committed). A change made with plain pip is an `outside` entry, recorded once, by
the next venvtx command (here the `log` after each step). Stamps, tracked runs (`exec`) and a
user's file edits are steps too.

The venv's history of states is checked against the test's own listings (distributions from
METADATA, INSTALLER and RECORD, read by the test) taken after every step: `status` before each
step's `log` (what differs from the last recorded state), `freeze --at` every recorded point at
the end, `diff --files` between consecutive points, and between every pair of points in one
sequence in four (VENVTX_MODEL_ALL_PAIRS=1: in every one); two points have the same state id
exactly when their listings are equal.

The steps of a sequence are drawn as it goes from its seed and the state the model is in, so a
failure names a seed that reproduces it with the same binary, and the exact step list, which
VENVTX_MODEL_REPLAY runs again. Each sequence has its own temp dir, kept when it fails.

Run as root, one sequence in 8 (seeds 5, 13, 21, ...) keeps its store on another filesystem (a
tmpfs the test mounts, `--store` on every call): every capture and restore crosses filesystems.

Environment: VENVTX_MODEL_SEQUENCES (default 100), VENVTX_MODEL_ALL_PAIRS, VENVTX_MODEL_JOBS (worker threads, default 2),
VENVTX_MODEL_SEED (run just that seed), VENVTX_MODEL_REPLAY (a JSON list of steps, as a failure
prints them: replays exactly those steps), VENVTX_MODEL_EXTERNAL (`all`: every sequence with its
store on the tmpfs; `none`: no sequence).
"""
import base64
import csv
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support import VENVTX, drop_scratch, flat, scratch, story_fixture, tree_diff, tree_hash

PACKAGES = ("alpha", "beta", "gamma")
VERSIONS = ("1.0", "2.0", "3.0")
BAD_VERSION = "9.0"  # no wheel has it: pip fails, venvtx aborts the transaction
KILLED = -9
# Sequences that once disagreed with the model, run before the random ones.
REGRESSIONS = [
    # A redo killed after moving a zero-copy object into place: its recovery renamed the
    # before-image over it and lost the object (seed 131).
    ("regression-zero-copy-redo", [["install", "gamma", "2.0", None], ["rollback"], ["kill", 23, ["redo"]],
                                   ["redo"]]),
]
MAX_FAILPOINT = 36  # the operations here took 16..31 mutating steps: most kills land, some finish


# ---------------------------------------------------------------------------------------------
# Wheels and the template venv (once per process)

def package_contents(name, version):
    """(files, scripts, data, console scripts) of one test wheel; deterministic bytes."""
    major = int(version.split(".")[0])
    files, scripts, data, console = {}, {}, {}, {}
    files["%s/__init__.py" % name] = "VERSION = %r\n" % version
    if name == "alpha":
        if major <= 2:
            files["alpha/core.py"] = "def f():\n    return 'core %s'\n" % version
        if major >= 2:
            files["alpha/extra.py"] = "EXTRA = %d\n" % major
        if major == 3:
            files["alpha/sub/__init__.py"] = ""
            files["alpha/sub/deep.py"] = "DEEP = True\n"
        # A script copied as is (no '#!python' to rewrite): the same bytes in every venv.
        scripts["alpha-tool"] = "#!/bin/sh\necho alpha %s\n" % version
    elif name == "beta":
        files["beta/util.py"] = "def util():\n    return 42\n"  # the same bytes in every version
        if major == 2:
            data["share/beta/notes.txt"] = "beta notes %s\n" % version
        if major == 3:
            files["beta/run.sh"] = ("#!/bin/sh\necho beta 3\n", 0o755)
    elif name == "gamma":
        files["gamma/__init__.py"] = "VERSION = %r\n\n\ndef main():\n    print(VERSION)\n" % version
        blob = b"".join(hashlib.sha256(("gamma %s %d" % (version, i)).encode()).digest()
                        for i in range(1024 * major))
        files["gamma/blob.bin"] = blob
        if major >= 2:
            # pip writes this script with the venv's own interpreter in its shebang: the state
            # hash below normalises the venv's path (gamma 1.0, in the template, has none).
            console["gamma-cli"] = "gamma:main"
    return files, scripts, data, console


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(wheel_dir, name, version):
    files, scripts, data, console = package_contents(name, version)
    dist_info = "%s-%s.dist-info" % (name, version)
    entries = []
    for path, content in files.items():
        content, mode = content if isinstance(content, tuple) else (content, 0o644)
        entries.append((path, content, mode))
    for path, content in scripts.items():
        entries.append(("%s-%s.data/scripts/%s" % (name, version, path), content, 0o755))
    for path, content in data.items():
        entries.append(("%s-%s.data/data/%s" % (name, version, path), content, 0o644))
    entries.append((dist_info + "/METADATA", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                    "Summary: venvtx model-test fixture\n" % (name, version), 0o644))
    entries.append((dist_info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: venvtx-model-test\n"
                    "Root-Is-Purelib: true\nTag: py3-none-any\n", 0o644))
    if console:
        entries.append((dist_info + "/entry_points.txt", "[console_scripts]\n" +
                        "".join("%s = %s\n" % item for item in console.items()), 0o644))
    record = []
    path = os.path.join(wheel_dir, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, content, mode in entries:
            content = content.encode() if isinstance(content, str) else content
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content)
            record.append("%s,%s,%d" % (arcname, _record_hash(content), len(content)))
        record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        zf.writestr(info, "\n".join(record) + "\n")


def clean_env():
    """This machine's pip settings (PIP_FIND_LINKS and the like) are not the test's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "VENVTX_")) and k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", PYTHONDONTWRITEBYTECODE="1")
    return env


RECORD_BIN_LINE = re.compile(rb"^(\.\./\.\./\.\./bin/[^,\n]*),[^,\n]*,[^,\n]*$", re.M)


def venv_state(root, template=None):
    """support.tree_hash, with the one thing that depends on where the venv lies normalised:
    scripts pip generates name the venv's interpreter (bin/*), and RECORD holds their hashes.
    A copy keeps the template's path in the scripts it was copied with: that is normalised too."""
    tree = tree_hash(root)
    spellings = {os.path.abspath(root).encode(), os.path.realpath(root).encode()}
    if template:
        spellings |= {os.path.abspath(template).encode(), os.path.realpath(template).encode()}
    spellings = sorted(spellings, key=len, reverse=True)
    for rel, (kind, mode, _size, _digest) in list(tree.items()):
        if kind != "file" or not (rel.startswith("bin" + os.sep) or rel.endswith(".dist-info/RECORD")):
            continue
        with open(os.path.join(root, rel), "rb") as f:
            content = f.read()
        for spelling in spellings:
            content = content.replace(spelling, b"<VENV>")
        if rel.endswith("RECORD"):
            content = RECORD_BIN_LINE.sub(rb"\1,<hash>,<size>", content)
        tree[rel] = ("file", mode, len(content), hashlib.sha256(content).hexdigest())
    return tree


def pip(venv, *args, env):
    return subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def own_listing(venv):
    """{normalized name: (version, installer, dist-info name, sha256 of RECORD, {path: (hash,
    size)})}, read by the test from the dist-infos (not by venvtx)."""
    site = Fixture.site_packages(venv)
    listing = {}
    for entry in sorted(os.listdir(site)):
        info = os.path.join(site, entry)
        if not entry.endswith(".dist-info") or not os.path.isdir(info):
            continue
        with open(os.path.join(info, "METADATA"), encoding="utf-8") as f:
            headers = dict(line.split(": ", 1) for line in f.read().split("\n\n")[0].splitlines() if ": " in line)
        installer = ""
        if os.path.exists(os.path.join(info, "INSTALLER")):
            with open(os.path.join(info, "INSTALLER")) as f:
                text = f.read()
                installer = text.splitlines()[0] if text else ""
        with open(os.path.join(info, "RECORD"), "rb") as f:
            record = f.read()
        files = {}
        for row in csv.reader(record.decode().splitlines()):
            if row:
                files[row[0]] = (row[1], row[2])
        listing[normalized(headers["Name"])] = (headers["Version"], installer, entry,
                                                hashlib.sha256(record).hexdigest(), files)
    return listing


def listing_key(listing):
    return {name: fields[:4] for name, fields in listing.items()}


def listing_diff(one, other):
    """[(name, version before or None, version after or None)] for each distribution that differs."""
    a, b = listing_key(one), listing_key(other)
    return sorted((name, a[name][0] if name in a else None, b[name][0] if name in b else None)
                  for name in set(a) | set(b) if a.get(name) != b.get(name))


def file_flags(one, other):
    """[(flag, RECORD path)] of the distributions that differ: + added, - removed, M changed."""
    flags = []
    a, b = listing_key(one), listing_key(other)
    for name in set(a) | set(b):
        if a.get(name) == b.get(name):
            continue
        before = one[name][4] if name in one else {}
        after = other[name][4] if name in other else {}
        flags += [("-", p) for p in before if p not in after]
        flags += [("+", p) for p in after if p not in before]
        flags += [("M", p) for p in before if p in after and before[p] != after[p]]
    return sorted(flags)


def change_text(change):
    before, after = change["before"], change["after"]
    if before is not None and before == after:
        return "%s %s (files changed)" % (change["name"], after)
    return "%s %s → %s" % (change["name"], before or "∅", after or "∅")


VALUED_OPTIONS = {"--installer", "--capture", "--probe", "--probe-timeout", "--gpus", "--wait", "--preview", "--jobs"}


def asked_for(argv, kind):
    """What a change asked for, as log says it: run's command, install's or remove's specs."""
    start = argv.index(kind, 1) + 1 if kind in argv[1:] else len(argv)
    end = argv.index("--", start) if "--" in argv[start:] else len(argv)
    if kind == "run":
        asked = argv[end + 1:]
    else:
        asked, skip = [], False
        for arg in argv[start:end]:
            if skip:
                skip = False
            elif arg in VALUED_OPTIONS:
                skip = True
            elif not arg.startswith("-"):
                asked.append(arg)
    text = " ".join(shlex.quote(a) for a in asked)
    return text[:45] + "..." if len(text) > 48 else text


def log_line(t):
    """A `venvtx log` line, from the entry's JSON (an outside change at its window's end, when it
    was detected)."""
    outside = t["kind"] == "outside"
    at = (t.get("finished_at") or t["started_at"]) if outside else t["started_at"]
    line = "%4d %s %-11s  %-8s  %s  %s@%s  " % (t["id"], ">" if outside else " ", t["state"], t["kind"],
                                           at, t["user"], t["host"])
    packages = t["packages"]
    line += ", ".join(change_text(p) for p in packages[:3])
    if len(packages) > 3:
        line += " and %d more" % (len(packages) - 3)
    note = (t.get("details") or {}).get("note", "")
    if note:
        line += (" " if packages else "") + "(%s)" % note
    elif not packages and t["state"] in ("aborted", "rolled_back") and t.get("message"):
        asked = asked_for(t["argv"], t["kind"])  # nothing changed: what was asked, and why not
        line += (asked + " " if asked else "") + "(%s)" % t["message"].split("; ")[0]
    elif not packages:
        line += "-"
    if t.get("undoes") and not note:
        line += " (undoes %d)" % t["undoes"]
    if t.get("undone_by"):
        line += " (undone by %d)" % t["undone_by"]
    return line


class Fixture:
    """Wheels, the template venv (base + alpha/beta/gamma 1.0, real pip), the base tree and the
    subtree each (distribution, version) adds to it."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="venvtx-model-template-")
        self.wheels = os.path.join(self.root, "wheels")
        os.mkdir(self.wheels)
        for name in PACKAGES:
            for version in VERSIONS:
                write_wheel(self.wheels, name, version)
        env = clean_env()
        self.env = env
        self.template = os.path.join(self.root, "venv")
        subprocess.run([sys.executable, "-m", "venv", self.template], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        # setuptools and pip are a thousand files that every copy and every hash would carry for
        # nothing: setuptools goes, pip moves out of the venv and stays importable through a .pth
        # file, so `<venv>/bin/python -m pip` (what venvtx runs) is still the venv's own pip; its
        # scripts go too.
        story_fixture().move_pip_outside(Path(self.template), Path(self.root) / "pip-lib")
        for entry in os.listdir(os.path.join(self.template, "bin")):
            if re.fullmatch(r"pip[0-9.]*", entry):
                os.unlink(os.path.join(self.template, "bin", entry))
        # share/ exists before any test wheel puts data there, so no distribution's removal
        # depends on who deletes a directory it leaves empty (pip leaves share/, venvtx not).
        os.makedirs(os.path.join(self.template, "share"))
        os.makedirs(os.path.join(self.template, "etc"))  # where a user's edit step writes
        with open(os.path.join(self.template, "share", "venvtx-model.txt"), "w") as f:
            f.write("base venv of test_model\n")
        base_venv = os.path.join(self.root, "base")
        subprocess.run(["cp", "-a", self.template, base_venv], check=True)
        self.base = venv_state(base_venv, self.template)

        def subtree(pair):
            name, version = pair
            work = os.path.join(self.root, "scratch-%s-%s" % pair)
            subprocess.run(["cp", "-a", base_venv, work], check=True)
            self.pip_ok(work, "install", *self.pip_args("%s==%s" % pair))
            tree = venv_state(work, self.template)
            missing = [p for p in self.base if p not in tree]
            assert not missing, "installing %s %s removed %s" % (name, version, missing)
            shutil.rmtree(work)
            return pair, {p: h for p, h in tree.items() if self.base.get(p) != h}

        with ThreadPoolExecutor(max_workers=2) as pool:
            self.subtrees = dict(pool.map(subtree, [(n, v) for n in PACKAGES for v in VERSIONS]))
        shutil.rmtree(base_venv)
        self.pip_ok(self.template, "install", *self.pip_args(*("%s==1.0" % n for n in PACKAGES)))
        self.check_expected_tree()
        self._expected = {}
        self._lock = threading.Lock()

    def check_expected_tree(self):
        """The computed tree of the template's state is its real tree, and installs are repeatable."""
        initial = {name: "1.0" for name in PACKAGES}
        actual = venv_state(self.template, self.template)
        expected = self.expected_tree(initial, cache=False)
        assert expected == actual, "computed template tree differs:\n" + tree_diff(expected, actual)

    @staticmethod
    def site_packages(venv):
        lib = os.path.join(venv, "lib")
        return [os.path.join(lib, d, "site-packages") for d in os.listdir(lib) if d.startswith("python")][0]

    def pip_args(self, *specs):
        return ["-q", *specs, "--no-index", "--find-links", self.wheels, "--no-compile"]

    def pip_ok(self, venv, *args):
        proc = pip(venv, *args, env=self.env)
        assert proc.returncode == 0, "pip %s: %s%s" % (" ".join(args), proc.stdout, proc.stderr)

    def expected_tree(self, installed, cache=True):
        key = tuple(sorted(installed.items()))
        if cache:
            with self._lock:
                if key in self._expected:
                    return self._expected[key]
        tree = dict(self.base)
        for name, version in installed.items():
            tree.update(self.subtrees[name, version])
        if cache:
            with self._lock:
                self._expected[key] = tree
        return tree

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


_fixture = None
_fixture_lock = threading.Lock()


def fixture():
    global _fixture
    with _fixture_lock:
        if _fixture is None:
            _fixture = Fixture()
        return _fixture


# ---------------------------------------------------------------------------------------------
# The model

# what a failed or refused transaction records is not modelled; an outside entry's changes are
COMPARED_PACKAGES = ("committed", "undone", "recorded")


class Tx:
    """`stamp`: how often each distribution had been changed outside venvtx when this
    transaction's after-state was last made by venvtx (committed, or redone)."""
    __slots__ = ("id", "kind", "state", "undone_by", "undoes", "packages", "stamp")

    def __init__(self, id, kind, state, undone_by=None, undoes=None, packages=None, stamp=()):
        self.id, self.kind, self.state = id, kind, state
        self.undone_by, self.undoes, self.packages, self.stamp = undone_by, undoes, packages, stamp

    def copy(self):
        return Tx(self.id, self.kind, self.state, self.undone_by, self.undoes, self.packages, self.stamp)

    def transaction(self):
        return self.state != "recorded"  # outside changes, stamps and runs are entries, not transactions


class Model:
    """installed: {distribution: version}; txs: the history's entries, oldest first; touched: how
    often each distribution was changed outside venvtx; extra: files a user wrote, by path, as
    support.tree_hash lists them (no transaction touches them)."""

    def __init__(self, installed, txs=(), touched=(), extra=(), held=True):
        self.installed = dict(installed)
        self.txs = [t.copy() for t in txs]
        self.touched = dict(touched)
        self.extra = dict(extra)
        self.held = held  # every recorded state holds its files (not with a store on another filesystem)

    def copy(self):
        return Model(self.installed, self.txs, self.touched, self.extra, self.held)

    def next_id(self):
        return max((t.id for t in self.txs), default=0) + 1

    def tx(self, id):
        return next(t for t in self.txs if t.id == id)

    def log(self):
        """What `venvtx --json log` must say, in the projection compared."""
        return [project(t.id, t.kind, t.state, t.undone_by, t.packages) for t in reversed(self.txs)]

    # transitions
    def commit(self, kind, packages, undoes=None, undoes_too=()):
        m = self.copy()
        tid = m.next_id()
        stamp = tuple(sorted(m.touched.items()))
        if undoes is not None:
            target = m.tx(undoes)
            if target.kind == "rollback":  # undoing a rollback redoes all it had undone
                for redone in m.txs:
                    if redone.undone_by == target.id:
                        redone.state = "recorded" if redone.kind == "outside" else "committed"
                        redone.undone_by, redone.stamp = None, stamp
            for undone in [target] + [m.tx(i) for i in undoes_too]:
                undone.state, undone.undone_by = "undone", tid
        m.txs.append(Tx(tid, kind, "committed", None, undoes, tuple(sorted(packages)), stamp))
        for name, _before, after in packages:
            if after is None:
                m.installed.pop(name, None)
            else:
                m.installed[name] = after
        return m

    def failed(self, kind, state):
        m = self.copy()
        m.txs.append(Tx(m.next_id(), kind, state))
        return m

    def outside(self, name, version, force=False):
        m = self.copy()
        before = m.installed.get(name)
        if force or before != version:  # pip does nothing for a version already there
            m.touched[name] = m.touched.get(name, 0) + 1
        if version is None:
            m.installed.pop(name, None)
        else:
            m.installed[name] = version
        if before != version:  # the next venvtx command records it, once
            m.txs.append(Tx(m.next_id(), "outside", "recorded", packages=((name, before, version),)))
        return m

    def entry(self, kind):
        """A stamp or a tracked run: recorded, nothing changed."""
        m = self.copy()
        m.txs.append(Tx(m.next_id(), kind, "recorded", packages=()))
        return m

    # rollback targets
    def undoable(self, t):
        return t.state == "committed" and t.undone_by is None and t.kind != "rollback"

    def installed_at(self, point):
        """The distributions after entry `point` (0: before the first): every change since
        replayed backwards from now."""
        installed = dict(self.installed)
        for t in reversed(self.txs):
            if t.id > point and t.state in ("committed", "undone", "recorded"):
                for name, before, _after in t.packages:
                    installed.pop(name, None) if before is None else installed.__setitem__(name, before)
        return installed

    def live_outside(self, since):
        return [t for t in reversed(self.txs) if t.kind == "outside" and t.undone_by is None and t.id > since]

    def held_return(self, op):
        """A rollback across changes made outside venvtx, from the held files: None when none is
        involved (or nothing is held: then as before), else (entries undone newest first, target)."""
        if op[0] == "redo":
            return None
        if op[0] == "rollback":
            found = [t for t in reversed(self.txs) if self.undoable(t)][:1]
            outside = self.live_outside(found[0].id if found else 0)[:1]
            if not outside:
                return None
            target = dict(self.installed)
            for name, before, _after in outside[0].packages:
                target.pop(name, None) if before is None else target.__setitem__(name, before)
            return outside, target
        if (op[1] != 0 and not any(t.id == op[1] for t in self.txs)) or not self.live_outside(op[1]):
            return None
        undone = [t for t in reversed(self.txs) if t.id > op[1] and
                  (self.undoable(t) or (t.kind == "outside" and t.undone_by is None))]
        return undone, self.installed_at(op[1])

    def rollback_targets(self, op):
        """-> (rc when there is nothing to do or None, [transactions to undo, in order])."""
        if op[0] == "rollback":
            found = [t for t in reversed(self.txs) if self.undoable(t)][:1]
            since = found[0].id if found else 0
            if self.live_outside(since):
                return 2, []  # the newest change is pip's, and nothing is held: refused, naming it
        elif op[0] == "redo":  # a redo is not itself redoable
            found = [t for t in reversed(self.txs)
                     if t.state == "committed" and t.undone_by is None and t.kind == "rollback"
                     and self.tx(t.undoes).kind != "rollback"][:1]
        else:  # rollback_to: any entry, or 0 (before the first)
            if op[1] != 0 and not any(t.id == op[1] for t in self.txs):
                return 2, []
            found = [t for t in reversed(self.txs) if t.id > op[1] and self.undoable(t)]
            predicted = dict(self.installed)
            for t in found:  # newest first: the oldest one's before-version stays
                for name, before, _after in t.packages:
                    predicted.pop(name, None) if before is None else predicted.__setitem__(name, before)
            if predicted != self.installed_at(op[1]):
                return 2, []  # it would not land in N's state: refused before acting
            if not found:
                return 0, []  # already there
        return (2 if not found else None), found


def project(id, kind, state, undone_by, packages):
    return (id, kind, state, undone_by, packages if state in COMPARED_PACKAGES else None)


def project_actual(log):
    return [project(t["id"], t["kind"], t["state"], t.get("undone_by"),
                    tuple(sorted((p["name"], p["before"], p["after"]) for p in t.get("packages") or [])))
            for t in log]


class Prediction:
    """outcomes: [(exit code, model)] a normal run may end in, the likeliest first; kills: the
    models `recover` may leave after a kill -9 anywhere in the operation."""

    def __init__(self, outcomes, kills):
        self.outcomes, self.kills = outcomes, kills
        self.rc, self.model = outcomes[0]


def refusal(model, kind):
    """Nothing changed; the refused transaction may be on record, but never as committed."""
    return [model, model.failed(kind, "aborted"), model.failed(kind, "rolled_back")]


def combined_packages(targets):
    """What one rollback of `targets` (newest first) records: per distribution, from the newest
    one's after-version to the oldest one's before-version, where they differ."""
    found = {}
    for target in targets:
        for name, before, after in target.packages:
            found.setdefault(name, [name, after, before])[2] = before
    return [tuple(change) for change in found.values() if change[1] != change[2]]


def interleave(chain, kind):
    """After a kill: each transaction of `chain` either happened or did not (rolled back, or
    never journaled); those before it happened, those after it never started."""
    found = []
    for before, after in zip(chain, chain[1:]):
        found += [before, before.failed(kind, "rolled_back"), after]
    return found


def predict(model, op, from_holds=True):
    verb = op[0]
    if verb == "remove":
        name = op[1]
        if name not in model.installed:
            return Prediction([(0, model)], [model])  # not installed: already gone, no transaction at all
        after = model.commit("remove", [(name, model.installed[name], None)])
        return Prediction([(0, after)], interleave([model, after], "remove"))
    if verb in ("install", "run"):
        name, version = op[1], op[2]
        if version not in VERSIONS:  # pip fails: venvtx restores and records the tx aborted
            return Prediction([(2, model.failed(verb, "aborted"))], refusal(model, verb))
        current = model.installed.get(name)
        if current == version:  # pip changes no file: no transaction is kept
            return Prediction([(0, model)], interleave([model, model], verb))
        after = model.commit(verb, [(name, current, version)])
        return Prediction([(0, after)], interleave([model, after], verb))
    held = model.held_return(op) if from_holds and verb in ("rollback", "rollback_to") else None
    if held:  # from the held files: what is there now is captured, so no drift refuses it
        undone, target = held
        packages = [(name, model.installed.get(name), target.get(name))
                    for name in sorted(set(model.installed) | set(target))
                    if model.installed.get(name) != target.get(name)]
        if not packages:
            found = Prediction([(0, model)], [model])  # there already
        else:
            after = model.commit("rollback", packages, undoes=undone[0].id, undoes_too=[t.id for t in undone[1:]])
            found = Prediction([(0, after)], interleave([model, after], "rollback"))
        if model.held:
            return found
        # A store on another filesystem holds nothing: the return goes only where the store has
        # every file it needs as objects (or needs none), else the rollback is answered as before.
        journal = predict(model, op, from_holds=False)
        return Prediction(found.outcomes + journal.outcomes, found.kills + journal.kills)
    if verb in ("rollback", "redo", "rollback_to"):
        rc, targets = model.rollback_targets(op)
        if rc is not None:
            return Prediction([(rc, model)], [model])
        # Drift: the venv no longer holds what an undone transaction left. The contract: refuse
        # before touching anything (exit 6), for the whole command (--to checks every target
        # against what the ones before it will have restored). Definite when a distribution it
        # changed is at another version now; possible when it is at the same version but pip
        # rewrote it outside venvtx since (new inodes and mtimes, same bytes).
        chain, definite, possible = [model], False, False
        for target in targets:
            current = chain[-1]
            stamp = dict(target.stamp)
            for name, _before, after in target.packages:
                if current.installed.get(name) != after:
                    definite = True
                elif current.touched.get(name, 0) != stamp.get(name, 0):
                    possible = True
            chain.append(current.commit("rollback", [(n, a, b) for n, b, a in target.packages],
                                        undoes=target.id))
        if len(targets) > 1:  # rollback --to: one transaction
            chain = [model, model.commit("rollback", combined_packages(targets), undoes=targets[0].id,
                                         undoes_too=[t.id for t in targets[1:]])]
        outcomes, kills = [], []
        if not definite:
            outcomes.append((0, chain[-1]))
            kills += interleave(chain, "rollback")
        if definite or possible:
            outcomes += [(6, m) for m in refusal(model, "rollback")]
            kills += refusal(model, "rollback")
        return Prediction(outcomes, kills)
    if verb == "outside_install":
        after = model.outside(op[1], op[2])
        return Prediction([(0, after)], [after])
    if verb == "outside_reinstall":  # the same version rewritten: new inodes, same bytes
        after = model.outside(op[1], model.installed.get(op[1], VERSIONS[0]), force=True)
        return Prediction([(0, after)], [after])
    if verb in ("stamp", "exec"):
        after = model.entry(verb)
        return Prediction([(0, after)], [after])
    if verb == "edit":
        return Prediction([(0, model)], [model])  # Sequence.run_step adds the file to model.extra
    if verb == "outside_remove":
        after = model.outside(op[1], None)
        return Prediction([(0, after)], [after])
    raise AssertionError("unknown step %r" % (op,))


# ---------------------------------------------------------------------------------------------
# Steps

CAPTURES = (None, "touch", "link")  # None: venvtx's own choice (auto)


def choose_step(rng, model):
    """One random step, weighted towards steps that change something (a rollback with nothing
    to undo is rarely chosen), and towards changes made outside venvtx to a distribution that a
    rollback or a redo would have to change (drift). About a third of the steps run pip, the
    slow part (~0.7s of CPU each)."""
    installed = sorted(model.installed)
    missing = [name for name in PACKAGES if name not in model.installed]
    undo_names = sorted({name for verb in (["rollback"], ["redo"])
                         for t in model.rollback_targets(verb)[1] for name, _b, _a in t.packages})
    to_ids = [i for i in [0] + [t.id for t in model.txs] if predict(model, ["rollback_to", i]).rc != 2]

    def version():
        return BAD_VERSION if rng.random() < 0.06 else rng.choice(VERSIONS)

    def outside():
        name = rng.choice(undo_names) if undo_names and rng.random() < 0.7 else rng.choice(PACKAGES)
        roll = rng.random()
        if name in model.installed and roll < 0.3:
            return ["outside_remove", name]
        if name in model.installed and roll < 0.5:
            return ["outside_reinstall", name]
        return ["outside_install", name, rng.choice(VERSIONS)]

    def kill():
        # kill -9 at a random mutating step of an operation that would change the venv (or
        # that a drift refusal should stop before it touches anything)
        kinds = []
        if installed:
            kinds.append(lambda: ["remove", rng.choice(installed)])
        kinds.append(lambda: [rng.choice(["install", "install", "run"]), rng.choice(PACKAGES),
                              rng.choice(VERSIONS), rng.choice(CAPTURES)])
        for verb in (["rollback"], ["redo"]):
            if predict(model, verb).rc != 2:
                kinds.append(lambda verb=verb: verb)
        if to_ids:
            kinds.append(lambda: ["rollback_to", rng.choice(to_ids)])
        return ["kill", rng.randint(1, MAX_FAILPOINT), rng.choice(kinds)()]

    options = [
        (12 if installed else 0, lambda: ["remove", rng.choice(installed)]),
        (1 if missing else 0, lambda: ["remove", rng.choice(missing)]),
        (9, lambda: ["install", rng.choice(PACKAGES), version(), rng.choice(CAPTURES)]),
        (4, lambda: ["run", rng.choice(PACKAGES), version(), rng.choice(CAPTURES)]),
        (14 if predict(model, ["rollback"]).rc != 2 else 1.5, lambda: ["rollback"]),
        (16 if predict(model, ["redo"]).rc != 2 else 1.5, lambda: ["redo"]),
        (8 if to_ids else 0, lambda: ["rollback_to", rng.choice(to_ids)]),
        (1, lambda: ["rollback_to", rng.choice([t.id for t in model.txs] or [1]) if rng.random() < 0.5
                     else len(model.txs) + 7]),
        (9, outside),
        (16, kill),
        (2, lambda: ["stamp"]),
        (2, lambda: ["exec"]),
        (2, lambda: ["edit", rng.randint(1, 1000)]),
    ]
    roll = rng.random() * sum(weight for weight, _ in options)
    for weight, make in options:
        roll -= weight
        if roll < 0 and weight:
            return make()
    return options[-1][1]()


class StepFailure(AssertionError):
    pass


class Sequence:
    """One sequence in its own temp dir (removed when it passes)."""

    def __init__(self, fx, label, seed=None, steps=None, store=None):
        """Either `seed`: steps chosen as it goes, from the state the model is in (so a kill that
        landed or not steers what follows), reproducibly; or `steps`: exactly those. `store`: a
        store directory elsewhere (--store), when not the venv's own."""
        self.fx, self.label, self.seed, self.steps, self.store = fx, label, seed, steps, store
        self.length = len(steps) if steps is not None else None
        self.tmp, self.in_memory = scratch("venvtx-model-%s-" % label)
        self.venv = os.path.join(self.tmp, "venv")
        subprocess.run(["cp", "-a", fx.template, self.venv], check=True)
        self.env = dict(fx.env)
        self.done = []
        self.transcript = []
        self.killed = 0
        self.exit_codes = {}
        self.points = {}  # entry id -> (the test's listing when it was recorded, its state id)
        self.listing = None  # the test's listing after the last step

    def venvtx(self, *args, env=None):
        """The binary may be replaced under us by a rebuild: a launch that fails (nothing ran)
        is retried for up to a minute; anything that did run is the test's to judge."""
        proc = None
        for _attempt in range(30):
            try:
                store = ["--store", self.store] if self.store else []
                proc = subprocess.run([VENVTX, "--venv", self.venv, *store, *args], capture_output=True,
                                      text=True, env=env or self.env, cwd=self.tmp, timeout=300)
            except OSError:  # ETXTBSY, EACCES or ENOENT while the linker writes it
                time.sleep(2)
                continue
            if proc.returncode not in (126, 127):
                return proc
            time.sleep(2)
        if proc is None:
            raise OSError("could not start %s for a minute" % VENVTX)
        return proc

    def command(self, op):
        """The venvtx arguments of a venvtx step."""
        verb = op[0]
        pip_tail = ["--no-index", "--find-links", self.fx.wheels, "--no-compile"]
        if verb == "remove":
            return ["remove", op[1]]
        capture = ["--capture", op[3]] if verb in ("install", "run") and op[3] else []
        if verb == "install":
            return ["install", *capture, "--installer", "pip", "%s==%s" % (op[1], op[2]), "--", "-q", *pip_tail]
        if verb == "run":
            return ["run", *capture, "--", os.path.join(self.venv, "bin", "python"), "-m", "pip", "install",
                    "-q", "%s==%s" % (op[1], op[2]), *pip_tail]
        if verb == "rollback":
            return ["rollback"]
        if verb == "redo":
            return ["rollback", "--redo"]
        if verb == "rollback_to":
            return ["rollback", "--to", str(op[1])]
        if verb == "stamp":
            return ["stamp", "--comment", "step %d" % len(self.done)]
        if verb == "exec":
            return ["exec", "--", os.path.join(self.venv, "bin", "python"), "-c", "import sys"]
        raise AssertionError(op)

    def observe(self):
        self.check_status()
        proc = self.venvtx("--json", "log")
        if proc.returncode != 0:
            self.fail("`venvtx --json log` exited %d: %s" % (proc.returncode, proc.stderr.strip()))
        try:
            entries = flat(json.loads(proc.stdout))
            log = project_actual(entries)
        except ValueError as error:
            self.fail("`venvtx --json log` printed no JSON (%s): %r" % (error, proc.stdout[:500]))
        self.check_text_log(entries)
        listing = own_listing(self.venv)
        for entry in entries:  # the entries this step added were recorded at this listing
            if entry["id"] not in self.points:
                self.points[entry["id"]] = (listing, entry["state_after"] or entry["state_before"])
        self.listing = listing
        return venv_state(self.venv, self.fx.template), log

    def check_status(self):
        """`status` names what differs from the last recorded state: after plain pip, the test's
        own listing after the previous step against the one now; after anything else, nothing
        (venvtx recorded the state it left, or nothing changed)."""
        proc = self.venvtx("--json", "status")
        if self.listing is None or not self.points:
            return
        if proc.returncode != 0:
            self.fail("`venvtx --json status` exited %d: %s" % (proc.returncode, proc.stderr.strip()))
        status = flat(json.loads(proc.stdout))
        outside = self.done[-1][0].startswith("outside_")
        expected = listing_diff(self.listing, own_listing(self.venv)) if outside else []
        actual = sorted((d["name"], d["before"], d["after"]) for d in status["dists"])
        if actual != expected or status["changed"] != bool(expected):
            self.fail("`venvtx status` says %s (changed: %s), the test's listings %s" % (actual, status["changed"], expected))

    def check_history(self):
        """At the end: `freeze --at` each recorded point, `diff --files` between points, and
        state ids, against the test's own listings."""
        ids = sorted(self.points)
        for point in ids:
            listing, state = self.points[point]
            proc = self.venvtx("--json", "freeze", "--at", str(point))
            frozen = flat(json.loads(proc.stdout)) if proc.returncode == 0 else {}
            got = {d["normalized"]: (d["version"], d["installer"], os.path.basename(d["dist_info"]), d["record"])
                   for d in frozen.get("dists", [])}
            if proc.returncode != 0 or got != listing_key(listing) or frozen["state"] != state:
                self.fail("`venvtx freeze --at %d` (exit %d) says %s, the test listed %s there"
                          % (point, proc.returncode, got, listing_key(listing)))
        everything = os.environ.get("VENVTX_MODEL_ALL_PAIRS") == "1" or (self.seed or 0) % 4 == 0
        pairs = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]] if everything else list(zip(ids, ids[1:]))
        for a, b in pairs:
            (one, state_a), (other, state_b) = self.points[a], self.points[b]
            if (state_a == state_b) != (listing_key(one) == listing_key(other)):
                self.fail("points %d and %d: state ids %s and %s, yet the test's listings are %s"
                          % (a, b, state_a[:12], state_b[:12], "equal" if listing_key(one) == listing_key(other)
                             else "different"))
            proc = self.venvtx("--json", "diff", str(a), str(b), "--files")
            if proc.returncode != 0:
                self.fail("`venvtx diff %d %d --files` exited %d: %s" % (a, b, proc.returncode, proc.stderr.strip()))
            diff = flat(json.loads(proc.stdout))
            dists = sorted((d["name"], d["before"], d["after"]) for d in diff["dists"])
            files = sorted((f["flag"], f["path"]) for f in diff["files"])
            if dists != listing_diff(one, other) or files != file_flags(one, other):
                self.fail("`venvtx diff %d %d --files` says %s %s, the test's listings %s %s"
                          % (a, b, dists, files[:20], listing_diff(one, other), file_flags(one, other)[:20]))

    def check_text_log(self, transactions):
        """`venvtx -q log` says what the JSON says: one line per entry, newest first."""
        proc = self.venvtx("-q", "log")
        lines = proc.stdout.splitlines()
        expected = [log_line(t) for t in transactions]
        if proc.returncode != 0 or lines != expected:
            self.fail("`venvtx log` (exit %d) does not say what `--json log` says:\n%s\nexpected:\n%s"
                      % (proc.returncode, proc.stdout, "\n".join(expected)))

    def fail(self, message, expected=None, actual=None):
        lines = ["sequence %s failed at step %d of %s: %s" % (self.label, len(self.done), self.length, message),
                 "  steps so far (VENVTX_MODEL_REPLAY): %s" % json.dumps(self.done),
                 "  temp dir (kept): %s" % self.tmp]
        if self.store:
            lines.append("  its store on a tmpfs, %s (replay with VENVTX_MODEL_EXTERNAL=all)" % self.store)
        if expected is not None:
            exp_model, exp_tree = expected
            tree, log = actual
            lines.append("  expected installed: %s" % dict(sorted(exp_model.installed.items())))
            if exp_tree != tree:
                lines.append("  tree, expected -> actual:\n    " + tree_diff(exp_tree, tree).replace("\n", "\n    "))
            if exp_model.log() != log:
                lines.append("  log expected (id, kind, state, undone_by, packages), newest first:\n    " +
                             "\n    ".join(map(repr, exp_model.log())))
                lines.append("  log actual:\n    " + "\n    ".join(map(repr, log)))
        lines.append("  transcript:\n    " + "\n    ".join(self.transcript[-12:]))
        raise StepFailure("\n".join(lines))

    def check(self, candidates, what):
        """The venv and the log match one of `candidates` (the first is the likeliest)."""
        tree, log = self.observe()
        for model in candidates:
            if model.log() == log and self.expected_tree(model) == tree:
                return model
        first = candidates[0]
        self.fail(what, (first, self.expected_tree(first)), (tree, log))

    def expected_tree(self, model):
        return dict(self.fx.expected_tree(model.installed), **model.extra)

    def run_step(self, model, step):
        self.done.append(step)
        verb = step[0]
        if verb == "edit":  # a user's file, outside every distribution: no entry, no transaction
            rel = os.path.join("etc", "user-notes.txt")
            with open(os.path.join(self.venv, rel), "w") as f:
                f.write("edit %d\n" % step[1])
            model = model.copy()
            model.extra.update({p: h for p, h in tree_hash(self.venv).items() if p in (rel, "etc")})
            self.transcript.append("edit %s" % rel)
            return self.check([model], "after a user's edit")
        if verb.startswith("outside_"):
            if verb == "outside_install":
                proc = pip(self.venv, "install", *self.fx.pip_args("%s==%s" % (step[1], step[2])), env=self.env)
            elif verb == "outside_reinstall":
                proc = pip(self.venv, "install", "--force-reinstall",
                           *self.fx.pip_args("%s==%s" % (step[1], model.installed.get(step[1], VERSIONS[0]))),
                           env=self.env)
            else:
                proc = pip(self.venv, "uninstall", "-y", "-q", step[1], env=self.env)
            self.transcript.append("pip %s -> %d %s" % (" ".join(map(str, step)), proc.returncode, proc.stderr.strip()[-300:]))
            if proc.returncode != 0:
                self.fail("plain pip failed (the test's own step): %s" % proc.stderr)
            return self.check(predict(model, step).kills, "after a change made outside venvtx")
        if verb == "kill":
            point, inner = step[1], step[2]
            args = self.command(inner)
            proc = self.venvtx(*args, env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.transcript.append("VENVTX_FAILPOINT=%d venvtx %s -> %d %s" % (
                point, " ".join(args), proc.returncode, proc.stderr.strip()[-300:]))
            if proc.returncode == KILLED:
                self.killed += 1
                recovered = self.venvtx("recover")
                self.transcript.append("venvtx recover -> %d %s" % (recovered.returncode, recovered.stderr.strip()[-300:]))
                if recovered.returncode != 0:
                    self.fail("`venvtx recover` after a kill at mutating step %d exited %d"
                              % (point, recovered.returncode))
                return self.check(predict(model, inner).kills,
                                  "after kill -9 at mutating step %d and recover: neither the before- nor "
                                  "the after-state (with the log saying which)" % point)
            step_for_prediction = inner  # it finished before the failpoint
        else:
            args = self.command(step)
            proc = self.venvtx(*args)
            self.transcript.append("venvtx %s -> %d %s" % (" ".join(args), proc.returncode, proc.stderr.strip()[-300:]))
            step_for_prediction = step
        prediction = predict(model, step_for_prediction)
        self.exit_codes[proc.returncode] = self.exit_codes.get(proc.returncode, 0) + 1
        candidates = [m for rc, m in prediction.outcomes if rc == proc.returncode]
        if not candidates:
            tree, log = self.observe()
            self.fail("exit code %d, the model says %s" % (
                proc.returncode, " or ".join(sorted({str(rc) for rc, _ in prediction.outcomes}))),
                (prediction.model, self.expected_tree(prediction.model)), (tree, log))
        return self.check(candidates, "after exit code %d" % proc.returncode)

    def run(self):
        model = Model({name: "1.0" for name in PACKAGES}, held=not self.store)
        self.check([model], "the fresh copy")
        # A stamp first: the history starts here, so every change made outside venvtx after it
        # is on record (before a venv has a store, there is no history to record it in).
        model = self.run_step(model, ["stamp"])
        if self.steps is not None:
            for step in self.steps:
                model = self.run_step(model, step)
            self.check_history()
        else:
            rng = random.Random(self.seed)
            self.length = rng.randint(3, 6)
            for _ in range(self.length):
                model = self.run_step(model, choose_step(rng, model))
        self.check_history()
        if self.store and os.path.exists(os.path.join(self.venv, ".venvtx")):
            self.fail("a store was made in the venv, not where --store put it (%s)" % self.store)
        drop_scratch(self.tmp, self.in_memory)
        if self.store:
            shutil.rmtree(os.path.dirname(self.store), ignore_errors=True)


# ---------------------------------------------------------------------------------------------

class ModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.fx = fixture()
        sys.stderr.write("\n  model fixture (wheels, template venv, %d subtrees): %.1fs\n"
                         % (len(cls.fx.subtrees), time.monotonic() - started))
        cls.external = None  # where sequences keep a store on another filesystem
        if os.geteuid() == 0 and os.environ.get("VENVTX_MODEL_EXTERNAL") != "none":
            mount_point = tempfile.mkdtemp(prefix="venvtx-model-stores-")
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", mount_point]).returncode == 0:
                cls.external = mount_point
            else:
                os.rmdir(mount_point)

    @classmethod
    def tearDownClass(cls):
        if cls.external:
            subprocess.run(["umount", "-l", cls.external])
            os.rmdir(cls.external)
        global _fixture
        with _fixture_lock:
            if _fixture is not None:
                _fixture.cleanup()
                _fixture = None

    def test_random_sequences(self):
        replay = os.environ.get("VENVTX_MODEL_REPLAY")
        if replay:
            jobs = [("replay", None, json.loads(replay))]
        elif os.environ.get("VENVTX_MODEL_SEED"):
            seed = int(os.environ["VENVTX_MODEL_SEED"])
            jobs = [("seed%d" % seed, seed, None)]
        else:
            count = int(os.environ.get("VENVTX_MODEL_SEQUENCES", "100"))
            jobs = [(label, None, steps) for label, steps in REGRESSIONS]
            jobs += [("seed%d" % seed, seed, None) for seed in range(count)]
        started = time.monotonic()
        verbs, exit_codes, totals = {}, {}, {"steps": 0, "kills": 0}
        lock = threading.Lock()

        every = os.environ.get("VENVTX_MODEL_EXTERNAL") == "all"
        externals = [label for label, seed, _ in jobs if self.external and (every or (seed is not None and seed % 8 == 5))]

        def one(job):
            label, seed, steps = job
            store = os.path.join(self.external, label, "store") if label in externals else None
            sequence = Sequence(self.fx, label, seed=seed, steps=steps, store=store)
            try:
                sequence.run()
                return None
            except StepFailure as failure:
                return str(failure)
            except Exception:  # the test's own error: still name the sequence and keep its dir
                return "sequence %s: error at step %d, temp dir (kept) %s, steps %s:\n%s" % (
                    label, len(sequence.done), sequence.tmp, json.dumps(sequence.done), traceback.format_exc())
            finally:
                with lock:
                    totals["steps"] += len(sequence.done)
                    totals["kills"] += sequence.killed
                    for step in sequence.done:
                        verbs[step[0]] = verbs.get(step[0], 0) + 1
                    for rc, n in sequence.exit_codes.items():
                        exit_codes[rc] = exit_codes.get(rc, 0) + n

        with ThreadPoolExecutor(max_workers=int(os.environ.get("VENVTX_MODEL_JOBS", "2"))) as pool:
            failures = [f for f in pool.map(one, jobs) if f]
        sys.stderr.write("\n  %d sequences (%d with the store on a tmpfs), %d steps run (%s; %d kills landed; "
                         "venvtx exit codes %s), %d failed, %.0fs\n" % (
                             len(jobs), len(externals), totals["steps"], ", ".join("%s %d" % kv for kv in sorted(verbs.items())),
                             totals["kills"], ", ".join("%d: %d" % kv for kv in sorted(exit_codes.items())),
                             len(failures), time.monotonic() - started))
        if failures:
            self.fail("%d of %d sequences disagree with the model:\n  %s\n\nthe first ones in full:\n\n%s"
                      % (len(failures), len(jobs), "\n  ".join(f.splitlines()[0] for f in failures),
                         "\n\n".join(failures[:6])))

    def test_a_changed_byte_is_noticed(self):
        """The check can fail: one byte changed behind the model's back is reported."""
        sequence = Sequence(self.fx, "tamper", steps=[["remove", "beta"]])
        model = sequence.run_step(Model({name: "1.0" for name in PACKAGES}), ["remove", "beta"])
        target = os.path.join(self.fx.site_packages(sequence.venv), "alpha", "core.py")
        with open(target, "ab") as f:
            f.write(b"#")
        with self.assertRaises(StepFailure) as caught:
            sequence.check([model], "tampered")
        self.assertIn("alpha/core.py", str(caught.exception))
        drop_scratch(sequence.tmp, sequence.in_memory)


if __name__ == "__main__":
    unittest.main()
