"""Shared pieces of the end-to-end suites: the story venv, venvtx runs, independent tree hashes."""
import base64
import glob
import hashlib
import importlib.util
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENVTX = os.environ.get("VENVTX_BIN", os.path.join(REPO, "build", "venvtx"))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "make_story_venv.py")
IGNORED_TOP = {".venvtx", ".lock"}

_template = None


def flat(document):
    """A --json document as the suites read it: log's list of transactions; a document that
    carries a transaction, that transaction with the document's other keys; a dry run, its plan
    and what-if merged in. Its real shape is checked against docs/json.schema.json by
    test_json_schema, which reads documents whole."""
    if not isinstance(document, dict) or document.get("schema_version") != 1:
        raise AssertionError("not a schema 1 document: %r" % (document,))
    rest = {k: v for k, v in document.items() if k not in ("schema_version", "transaction", "plan", "what_if")}
    if "transactions" in document:
        return document["transactions"]
    if document.get("transaction") is not None:
        return {**document["transaction"], **rest}
    if document.get("dry_run"):
        return {**(document.get("plan") or {}), **(document.get("what_if") or {}), **rest}
    return rest


def story_template():
    """Builds the story venv once per process (real wheels, real pip; its pip outside it and no
    setuptools, make_story_venv.py --pip-outside); tests copy it. Under
    ctest it is built once for every suite (the fixture `story_template`, named by
    VENVTX_STORY_TEMPLATE), and never written."""
    global _template
    shared = os.environ.get("VENVTX_STORY_TEMPLATE")
    if _template is None and shared and os.path.isdir(os.path.join(shared, "wheels-extra")):
        _template = shared
    if _template is None:
        root = tempfile.mkdtemp(prefix="venvtx-e2e-template-")
        subprocess.run([sys.executable, FIXTURE, root, "--extra-wheels", "--pip-outside"], check=True,
                       stdout=subprocess.DEVNULL)
        _template = root
    return _template


def own_scripts(venv):
    """Makes a copy of the story venv run its own interpreter from bin/ (pip's scripts name the
    template's, where it was built), as a venv made at this path would, RECORD rows included."""
    old = ("#!" + os.path.join(story_template(), "venv", "bin", "python")).encode()
    new = ("#!" + os.path.join(venv, "bin", "python")).encode()
    changed = {}
    bin_dir = os.path.join(venv, "bin")
    for name in os.listdir(bin_dir):
        path = os.path.join(bin_dir, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if data.startswith(old):
            data = new + data[len(old):]
            with open(path, "wb") as f:
                f.write(data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            changed[name] = "sha256=%s,%d" % (digest, len(data))
    for record in glob.glob(os.path.join(site_packages(venv), "*.dist-info", "RECORD")):
        with open(record) as f:
            rows = f.read().splitlines()
        fixed = [row.split(",")[0] + "," + changed[os.path.basename(row.split(",")[0])]
                 if row.split(",")[0].split("/")[-2:-1] == ["bin"] and os.path.basename(row.split(",")[0]) in changed
                 else row for row in rows]
        if fixed != rows:
            with open(record, "w") as f:
                f.write("\n".join(fixed) + "\n")


def story_fixture():
    """tests/fixtures/make_story_venv.py as a module."""
    spec = importlib.util.spec_from_file_location("make_story_venv", FIXTURE)
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    return fixture


def write_wheel(*args, **kwargs):
    """The fixture's write_wheel (a PEP 427 wheel from a dict of files)."""
    return story_fixture().write_wheel(*args, **kwargs)


def site_packages(venv):
    lib = os.path.join(venv, "lib")
    return os.path.join(lib, [d for d in os.listdir(lib) if d.startswith("python")][0], "site-packages")


def pack_members(store):
    """{object hex: sha256 of its bytes} for every member of every pack the index lists, read
    with the zstd tool and Python's tarfile (not venvtx): a member whose bytes are not its
    name's has a different value."""
    db = sqlite3.connect(os.path.join(store, "index.sqlite"))
    try:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'packs'").fetchall():
            return {}
        files = [row[0] for row in db.execute("SELECT file FROM packs ORDER BY id")]
    finally:
        db.close()
    members = {}
    for name in files:
        path = os.path.join(store, "packs", name)
        if not os.path.isfile(path):
            continue
        unzstd = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            with tarfile.open(fileobj=unzstd.stdout, mode="r|") as archive:
                for member in archive:
                    members[member.name] = hashlib.sha256(archive.extractfile(member).read()).hexdigest()
        except tarfile.TarError:
            pass
        finally:
            unzstd.stdout.close()
            unzstd.wait()
    return members


def tree_hash(root):
    """path -> (type, mode, size, sha256 or link target) for everything under root, without
    venvtx's own files. Independent of venvtx: plain os.lstat and hashlib."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in IGNORED_TOP]
            filenames = [f for f in filenames if f not in IGNORED_TOP]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", mode, 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir", mode, 0, "")
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                result[rel] = ("file", mode, st.st_size, digest)
            else:  # a fifo, socket or device node, by its type (opening a fifo would block)
                kind = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "chardev",
                        stat.S_IFBLK: "blockdev"}.get(stat.S_IFMT(st.st_mode), "node")
                result[rel] = (kind, mode, 0, "")
        # os.walk does not descend into symlinked dirs; they are recorded as links above.
    return result


def stat_manifest(root):
    """path -> (mode, dev, inode, size, mtime_ns, ctime_ns) for everything under root, without
    venvtx's own files: what any change moves (a write, chmod or link moves the ctime, a
    replacement the inode). Equal manifests are equal trees, so a test that expects nothing to
    change compares these and hashes (tree_hash) only where one moved."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == root:
            dirnames[:] = [d for d in dirnames if d not in IGNORED_TOP]
            filenames = [f for f in filenames if f not in IGNORED_TOP]
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            result[os.path.join(dirpath, name)] = (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                                   st.st_ctime_ns)
    return result


def store_growth(venv, store=None):
    """What the store costs on disk beyond the venv: st_blocks of each inode under the store that
    the venv does not name too (a hold is a second name of a venv file: it costs nothing while the
    venv keeps the file), without the index's own files and the reserve (room kept for recovery)."""
    store = store or os.path.join(venv, ".venvtx")
    in_venv = set()
    for dirpath, dirnames, filenames in os.walk(venv):
        if os.path.abspath(dirpath) == os.path.abspath(venv):
            dirnames[:] = [d for d in dirnames if os.path.join(venv, d) != store]
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            in_venv.add((st.st_dev, st.st_ino))
    total, seen = 0, set()
    for dirpath, dirnames, filenames in os.walk(store):
        for name in dirnames + filenames:
            if dirpath == store and (name.startswith("index.sqlite") or name == "reserve"):
                continue
            st = os.lstat(os.path.join(dirpath, name))
            key = (st.st_dev, st.st_ino)
            if key not in in_venv and key not in seen:
                seen.add(key)
                total += st.st_blocks * 512
    return total


def tree_diff(before, after):
    lines = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            lines.append("%s: %s -> %s" % (path, before.get(path), after.get(path)))
    return "\n".join(lines[:40])


ON_DISK = os.environ.get("VENVTX_TESTS_ON_DISK") == "1"


def scratch(prefix):
    """A new temp dir for one test, with a tmpfs mounted on it (as root): the suites copy and
    remove venvs hundreds of times, and on this ext4 a copy of a 1,800-entry venv costs 0.4 to
    0.9 s of system time against 0.1 s on a tmpfs. What they test (kills, faults, recovery, parity)
    does not depend on the filesystem; the suites that touch it (durability, watching, uv's
    links, the containment walk) run with VENVTX_TESTS_ON_DISK=1 (tests/CMakeLists.txt), and so
    does any suite run with it set by hand. Returns (path, whether it is in memory)."""
    path = tempfile.mkdtemp(prefix=prefix)
    return path, os.geteuid() == 0 and not ON_DISK and mounted_tmpfs(path, "4g,mode=700", quiet=True)


def drop_scratch(path, in_memory):
    """Removes a `scratch` dir and its tmpfs (a failed test's is kept, by not calling this: in
    memory until the next boot)."""
    if in_memory:
        subprocess.run(["umount", "-l", path])
    shutil.rmtree(path, ignore_errors=True)


def perf_events_allowed():
    """Whether this process may open the software dummy perf event venvtx's tracked runs use to
    record each mapping (perf_event_open(2): refused under a strict perf_event_paranoid or a
    seccomp profile such as a container's)."""
    import ctypes
    import struct
    attr = bytearray(64)  # struct perf_event_attr as of PERF_ATTR_SIZE_VER0
    inherit, exclude_kernel, exclude_hv, mmap = 1 << 1, 1 << 5, 1 << 6, 1 << 8
    struct.pack_into("IIQ", attr, 0, 1, len(attr), 9)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_DUMMY
    struct.pack_into("Q", attr, 40, inherit | exclude_kernel | exclude_hv | mmap)
    buffer = (ctypes.c_char * len(attr)).from_buffer(attr)
    number = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)  # SYS_perf_event_open
    if number is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, buffer, 0, -1, -1, 8)  # this process, any CPU, FD_CLOEXEC
    if fd < 0:
        return False
    os.close(fd)
    return True


def mounted_tmpfs(path, size, quiet=False):
    """Mounts a tmpfs of `size` (and options) at `path`; True where it could."""
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path],
                          stderr=subprocess.DEVNULL if quiet else None).returncode == 0


class VenvTestCase(unittest.TestCase):
    """Each test gets a private temp dir (`scratch`) with a copy of the story venv; kept on
    failure."""

    def setUp(self):
        self.tmp, self.in_memory = scratch("venvtx-e2e-%s-" % self._testMethodName)
        self.venv = os.path.join(self.tmp, "venv")
        subprocess.run(["cp", "-a", os.path.join(story_template(), "venv"), self.venv], check=True)
        self.site = [os.path.join(self.venv, "lib", d, "site-packages")
                     for d in os.listdir(os.path.join(self.venv, "lib")) if d.startswith("python")][0]
        self.env = dict(os.environ)
        self.env.pop("VIRTUAL_ENV", None)
        self.env.pop("VENVTX_FAKE_GPUS", None)

    def run(self, result=None):
        result = result if result is not None else self.defaultTestResult()
        problems = len(result.failures) + len(result.errors)
        super().run(result)
        if len(result.failures) + len(result.errors) > problems:
            sys.stderr.write("\n  kept temp dir of %s: %s\n" % (self.id(), getattr(self, "tmp", "?")))
        elif getattr(self, "tmp", None):
            drop_scratch(self.tmp, getattr(self, "in_memory", False))
        return result

    def put_pip_inside(self):
        """pip back in the venv, where `python -m venv` puts it (the template keeps it outside,
        make_story_venv.py --pip-outside): for a test of pip's own files or of a clean venv."""
        pip_lib = os.path.join(story_template(), "pip-lib")
        for entry in os.listdir(pip_lib):
            shutil.copytree(os.path.join(pip_lib, entry), os.path.join(self.site, entry))
        os.unlink(os.path.join(self.site, "venvtx-tests-pip.pth"))

    def use_story_wheels(self):
        """Installs go offline to the story's wheels (`self.wheel_args`, after the specs), with
        none of this machine's pip settings or caches."""
        template = story_template()
        self.wheel_args = ["--", "--no-index", "--find-links", os.path.join(template, "wheels"),
                           "--find-links", os.path.join(template, "wheels-extra")]
        self.env["PIP_CONFIG_FILE"] = os.devnull
        self.env["PIP_NO_CACHE_DIR"] = "1"

    def venvtx(self, *args, env=None, cwd=None, timeout=120):
        cmd = [VENVTX, "--venv", self.venv, *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env or self.env,
                              cwd=cwd or self.tmp, timeout=timeout)

    def venvtx_json(self, *args, **kwargs):
        """The process and its document, flattened by `flat()`."""
        proc = self.venvtx("--json", *args, **kwargs)
        return proc, flat(json.loads(proc.stdout))

    def assertTreeEqual(self, before, after):
        self.assertEqual(before, after, "trees differ (temp dir %s):\n%s" % (self.tmp, tree_diff(before, after)))

    def assertOneLineError(self, proc, code):
        self.assertEqual(proc.returncode, code, "stdout=%r stderr=%r (temp dir %s)" % (proc.stdout, proc.stderr, self.tmp))
        message = proc.stderr.strip()
        self.assertTrue(message.startswith("venvtx: "), proc.stderr)
        self.assertNotIn("\n", message, proc.stderr)

    def python(self, code):
        return subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", code],
                              capture_output=True, text=True, env=self.env)

    def store_index(self):
        return sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))

    def object_files(self):
        objects = os.path.join(self.venv, ".venvtx", "objects")
        return sorted(os.path.join(d, f) for d, _, files in os.walk(objects) for f in files)

    def stored_files(self):
        """Objects, and the files removals left unhashed in staging (pending captures)."""
        staging = os.path.join(self.venv, ".venvtx", "staging")
        return self.object_files() + sorted(os.path.join(d, f) for d, _, files in os.walk(staging) for f in files)



class PlainPip:
    """Plain pip in the test's venv, as a user types it (installs from `self.wheels`)."""

    def pip(self, *args):
        proc = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", *args],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def pip_install(self, *specs):
        self.pip("install", "-q", "--no-index", "--find-links", self.wheels, *specs)


def mount_tmpfs(case, path, size):
    """Mounts a tmpfs of `size` at `path` for the rest of `case` (skipped where it cannot:
    mounting needs root); returns `path`."""
    if os.geteuid() != 0:
        case.skipTest("mounting a tmpfs needs root")
    os.makedirs(path, exist_ok=True)
    if not mounted_tmpfs(path, size):
        case.skipTest("could not mount a tmpfs")
    case.addCleanup(subprocess.run, ["umount", "-l", path])
    return path


class ExternalStoreMixin:
    """The store on another filesystem: a tmpfs mounted for the test, and every venvtx call
    given --store there."""

    STORE_FILESYSTEM_SIZE = "256m"

    def setUp(self):
        super().setUp()
        mount_point = mount_tmpfs(self, os.path.join(self.tmp, "other-filesystem"), self.STORE_FILESYSTEM_SIZE)
        self.store = os.path.join(mount_point, "store")

    def venvtx(self, *args, **kwargs):
        return super().venvtx("--store", self.store, *args, **kwargs)
