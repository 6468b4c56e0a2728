"""Preview (issue 11): the change is made first in a private overlay view of the venv and probed
there, while the live venv is probed as it is; only a change whose probe passes reaches the live
venv. A reader importing from the live venv meanwhile never sees a broken state; a failing
previewed transaction changes nothing in the live venv, not even a ctime."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

from support import VENVTX, VenvTestCase, tree_diff, tree_hash

NVIDIA = "nvidia-*-cu13"
SLOW_TORCH = "import time; time.sleep(1); import torch"  # a probe whose run is a wide window
IN_A_VIEW = "import os, sys; sys.exit(0 if os.path.ismount(sys.prefix) else 1)"  # passes only in the overlay
NEVER_CHANGED = "the live venv was never changed"

# The reader: the venv's own python, in a loop, starting a fresh `python -c "import torch"` each
# time and writing one line per attempt: start, end, exit status, last line of stderr.
READER = r"""
import os, subprocess, sys, time
python, stop, out = sys.argv[1:4]
with open(out, "a", buffering=1) as f:
    while not os.path.exists(stop):
        start = time.time()
        p = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True)
        end = time.time()
        last = (p.stderr.strip().splitlines() or [""])[-1]
        f.write("%.6f %.6f %d %s\n" % (start, end, p.returncode, last))
        time.sleep(0.005)
"""


class PreviewCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.rel_site = os.path.relpath(self.site, self.venv)
        self.previews = os.path.join(self.venv, ".venvtx", "preview")

    def install(self, *specs, probe=None, extra=(), json_out=False):
        args = ["install", "--installer", "pip", *specs, *extra]
        if probe:
            args += ["--probe", probe]
        args += self.wheel_args
        return self.venvtx_json(*args) if json_out else self.venvtx(*args)

    def said(self, proc):
        return "exit %d\nstdout=%s\nstderr=%s\n(temp dir %s)" % (proc.returncode, proc.stdout[-3000:],
                                                               proc.stderr[-3000:], self.tmp)

    def make_store(self):
        """A first, harmless transaction (undone), so that the store exists."""
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)

    def assertNoPreviewLeft(self):
        if os.path.isdir(self.previews):
            self.assertEqual(os.listdir(self.previews), [], "a preview area was left behind")

    def tx(self, tx_id):
        proc, shown = self.venvtx_json("show", str(tx_id))
        self.assertEqual(proc.returncode, 0, self.said(proc))
        return shown

    def assertAborted(self, doc):
        """The record of a previewed transaction whose probe failed: nothing was applied."""
        self.assertEqual(doc["state"], "aborted", json.dumps(doc, indent=1)[:3000])
        self.assertEqual(doc["preview"], {"used": True}, "preview of an aborted tx: %r" % (doc["preview"],))
        self.assertFalse(doc["probe"]["passed"])
        self.assertTrue(doc["baseline"]["passed"])
        self.assertEqual((doc["files"]["added"], doc["files"]["removed"], doc["files"]["modified"]), (0, 0, 0))
        self.assertIn(NEVER_CHANGED, doc["message"])

    def torch_version(self):
        proc = self.python("import importlib.metadata as m; print(m.version('torch'))")
        return proc.stdout.strip()

    def changed_since(self, mark_ns):
        """Paths in the live venv, other than its root, .venvtx and .lock, whose ctime is after
        mark_ns (the ctime of a marker file: the same clock the kernel stamps ctimes with)."""
        newer = []
        for dirpath, dirnames, filenames in os.walk(self.venv):
            if dirpath == self.venv:
                dirnames[:] = [d for d in dirnames if d != ".venvtx"]
                filenames = [f for f in filenames if f != ".lock"]
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.lstat(path).st_ctime_ns > mark_ns:
                    newer.append(os.path.relpath(path, self.venv))
        return sorted(newer)

    def mark(self):
        marker = os.path.join(self.tmp, "marker-%d" % time.monotonic_ns())
        with open(marker, "w"):
            pass
        mark_ns = os.lstat(marker).st_ctime_ns
        time.sleep(0.05)  # a change after this is stamped later than the marker, whatever the tick
        return mark_ns


class ConcurrentReader(PreviewCase):
    """The headline: while failing transactions run with preview, a process importing torch from
    the live venv over and over never fails; with --preview never it does."""

    def start_reader(self):
        self.reader_out = os.path.join(self.tmp, "reader.log")
        self.reader_stop = os.path.join(self.tmp, "reader.stop")
        env = dict(self.env, PYTHONDONTWRITEBYTECODE="1")  # the reader itself writes nothing
        python = os.path.join(self.venv, "bin", "python")
        self.reader = subprocess.Popen([python, "-c", READER, python, self.reader_stop, self.reader_out],
                                       cwd=self.tmp, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        self.addCleanup(self.stop_reader)
        deadline = time.time() + 30
        while len(self.attempts()) < 3:  # the reader works before anything runs
            self.assertLess(time.time(), deadline, "the reader made no attempts")
            time.sleep(0.05)
        self.assertEqual([a for a in self.attempts() if a[2] != 0], [], "the reader fails before any change")

    def stop_reader(self):
        if self.reader.poll() is None:
            with open(self.reader_stop, "w"):
                pass
            try:
                self.reader.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.reader.kill()
                self.reader.wait()

    def attempts(self):
        if not os.path.exists(self.reader_out):
            return []
        result = []
        with open(self.reader_out) as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # being written
                start, end, rc, last = (line.rstrip("\n").split(" ", 3) + [""])[:4]
                result.append((float(start), float(end), int(rc), last))
        return result

    def watched(self, *args, **kwargs):
        """Runs venvtx while the reader reads; returns its result and the reader's attempts made
        wholly inside the run, after checking the run was wide enough to overlap many of them."""
        start = time.time()
        proc = self.venvtx(*args, **kwargs)
        end = time.time()
        time.sleep(0.3)  # the attempt under way at the end is written
        inside = [a for a in self.attempts() if a[0] >= start and a[1] <= end]
        self.assertGreaterEqual(end - start, 1.0, "the probe sleeps 1 s: " + self.said(proc))
        self.assertGreaterEqual(len(inside), 8, "the reader made only %d imports during a %.2f s run"
                                % (len(inside), end - start))
        return proc, inside

    def assertFailedInPreviewUnseen(self, proc, inside, mark_ns, before):
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn(NEVER_CHANGED, proc.stdout, self.said(proc))
        failed = [a for a in inside if a[2] != 0]
        self.assertEqual(failed, [], "the reader saw the live venv broken (%d of %d imports failed)"
                         % (len(failed), len(inside)))
        self.assertEqual(self.changed_since(mark_ns), [], "live paths with a newer ctime")
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()

    def test_failing_previewed_remove_install_and_run_are_never_seen_live(self):
        self.make_store()
        before = tree_hash(self.venv)
        self.start_reader()

        mark_ns = self.mark()
        proc, inside = self.watched("remove", NVIDIA, "--probe", SLOW_TORCH)
        self.assertIn("libcusparseLt.so.0", proc.stdout)
        self.assertFailedInPreviewUnseen(proc, inside, mark_ns, before)

        mark_ns = self.mark()
        proc, inside = self.watched("install", "--installer", "pip", "torch==2.12.0", "--probe", SLOW_TORCH,
                                    *self.wheel_args)
        self.assertIn("libcufile.so.0", proc.stdout)
        self.assertFailedInPreviewUnseen(proc, inside, mark_ns, before)

        mark_ns = self.mark()
        proc, inside = self.watched("run", "--probe", SLOW_TORCH, "--", "sh", "-c",
                                    "rm -rf '%s'" % os.path.join(self.site, "nvidia", "cusparselt"))
        self.assertIn("libcusparseLt.so.0", proc.stdout)
        self.assertFailedInPreviewUnseen(proc, inside, mark_ns, before)

        proc, log = self.venvtx_json("log")
        self.assertEqual([(t["id"], t["kind"], t["state"]) for t in log][:3],
                         [(5, "run", "aborted"), (4, "install", "aborted"), (3, "remove", "aborted")])

    def test_in_place_failure_is_seen_by_the_reader(self):
        # The same remove without a preview: the reader can tell the difference.
        before = tree_hash(self.venv)
        self.start_reader()
        mark_ns = self.mark()
        proc, inside = self.watched("remove", NVIDIA, "--preview", "never", "--probe", SLOW_TORCH)
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn("the venv is as it was before", proc.stdout)
        # ...and the ctime check of the previewed runs would have seen it:
        self.assertIn(os.path.join(self.rel_site, "nvidia", "cusparselt"), self.changed_since(mark_ns))
        failed = [a for a in inside if a[2] != 0]
        self.assertGreaterEqual(len(failed), 1, "no import failed while the venv was changed in place")
        self.assertTrue(any("ImportError" in a[3] for a in failed), failed[:3])
        self.assertTreeEqual(before, tree_hash(self.venv))


class PreviewedRemove(PreviewCase):
    def test_failing_remove_is_aborted_and_changes_nothing(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", NVIDIA, "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn("probe (in a private view) FAILED: ImportError: libcusparseLt.so.0", proc.stdout)
        self.assertIn("the live venv was never changed (tx 1 aborted)", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()
        self.assertEqual(self.python("import torch").returncode, 0)
        doc = self.tx(1)
        self.assertAborted(doc)
        self.assertIn("libcusparseLt.so.0", doc["probe"]["error"])
        self.assertEqual(sorted(p["name"] for p in doc["packages"]),
                         ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"])
        proc, doc = self.venvtx_json("remove", NVIDIA, "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertEqual(doc["id"], 2)
        self.assertAborted(doc)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()

    def test_passing_remove_commits_and_rollback_restores_exactly(self):
        before = tree_hash(self.venv)
        proc, doc = self.venvtx_json("remove", "flash-attn", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": True}))
        self.assertTrue(doc["probe"]["passed"])
        self.assertIsNone(doc["live_probe"])
        after = tree_hash(self.venv)
        gone = sorted(p for p in before if p not in after)
        flash = [os.path.join(self.rel_site, "flash_attn"), os.path.join(self.rel_site, "flash_attn-2.8.3.dist-info")]
        self.assertEqual(gone, sorted(p for p in before if any(p == f or p.startswith(f + "/") for f in flash)))
        self.assertEqual([p for p in after if before.get(p) != after[p]], [], "remove added or changed files")
        self.assertEqual(doc["files"]["removed"], len([p for p in gone if before[p][0] != "dir"]))
        self.assertNotEqual(self.python("import flash_attn").returncode, 0)
        self.assertNoPreviewLeft()
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_preview_never_restores_in_place(self):
        before = tree_hash(self.venv)
        proc, doc = self.venvtx_json("remove", NVIDIA, "--preview", "never", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertEqual(doc["state"], "rolled_back")
        self.assertEqual(doc["preview"], {"used": False, "reason": "--preview never"})
        self.assertFalse(doc["probe"]["passed"])
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_probe_live_after_a_passing_remove(self):
        proc, doc = self.venvtx_json("remove", "flash-attn", "--probe", "import torch", "--probe-live")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": True}))
        self.assertTrue(doc["probe"]["passed"])
        self.assertTrue(doc["live_probe"]["passed"])
        self.assertEqual(doc["live_probe"]["code"], ["import torch"])
        self.assertEqual(self.tx(1)["live_probe"]["passed"], True)

    def test_probe_live_failing_restores(self):
        # Passes in the view (the venv root is the overlay's mount point there), fails live.
        before = tree_hash(self.venv)
        proc, doc = self.venvtx_json("remove", "flash-attn", "--no-baseline", "--probe", IN_A_VIEW, "--probe-live")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("rolled_back", {"used": True}))
        self.assertTrue(doc["probe"]["passed"])
        self.assertFalse(doc["live_probe"]["passed"])
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()
        proc = self.venvtx("remove", "flash-attn", "--no-baseline", "--probe", IN_A_VIEW, "--probe-live")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn("probe (in a private view) passed", proc.stdout)
        self.assertIn("live probe FAILED", proc.stdout)
        self.assertIn("(tx 2 rolled back)", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))


class PreviewedInstall(PreviewCase):
    def test_failing_install_is_aborted_and_changes_nothing(self):
        before = tree_hash(self.venv)
        proc, doc = self.install("torch==2.12.0", probe="import torch", json_out=True)
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertAborted(doc)
        self.assertIn("libcufile.so.0", doc["probe"]["error"])
        self.assertEqual(doc["packages"], [{"name": "torch", "before": "2.11.0", "after": "2.12.0"}])
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()
        self.assertEqual(self.torch_version(), "2.11.0")

    def test_passing_install_is_what_pip_makes_and_rolls_back_exactly(self):
        before = tree_hash(self.venv)
        pristine = os.path.join(self.tmp, "pristine")
        subprocess.run(["cp", "-a", self.venv, pristine], check=True)

        proc, doc = self.install("torch==2.12.0", probe="import sys", json_out=True)
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": True}))
        self.assertTrue(doc["probe"]["passed"])
        shown = self.tx(doc["id"])
        self.assertEqual(shown["packages"], [{"name": "torch", "before": "2.11.0", "after": "2.12.0"}])
        self.assertTrue(os.path.isdir(os.path.join(self.site, "torch-2.12.0.dist-info")))
        self.assertFalse(os.path.exists(os.path.join(self.site, "torch-2.11.0.dist-info")))
        self.assertEqual(self.torch_version(), "2.12.0")
        self.assertNoPreviewLeft()
        replayed = tree_hash(self.venv)

        # Plain pip on the same before-state AT THE SAME PATH (so that bin/ shebangs and the
        # RECORD hashes of the scripts pip writes are the same): swap the venvs, pip, swap back.
        venvtx_result = os.path.join(self.tmp, "venvtx-result")
        os.rename(self.venv, venvtx_result)
        os.rename(pristine, self.venv)
        pip = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "install", "torch==2.12.0",
                              *self.wheel_args[1:]], capture_output=True, text=True, env=self.env, cwd=self.tmp)
        plain = tree_hash(self.venv)
        os.rename(self.venv, os.path.join(self.tmp, "plain-pip"))
        os.rename(venvtx_result, self.venv)
        self.assertEqual(pip.returncode, 0, pip.stderr)

        # The one difference allowed: pip writes bytecode whose header holds its source's mtime
        # (bytes 8-12), and the two installs ran at different times. Same paths, modes, sizes,
        # and bytes apart from that field.
        def masked(tree, root):
            result = {}
            for path, entry in tree.items():
                if entry[0] == "file" and path.endswith(".pyc") and "/__pycache__/" in path:
                    with open(os.path.join(root, path), "rb") as f:
                        data = f.read()
                    entry = entry[:3] + (data[:8] + b"MTIM" + data[12:],)
                result[path] = entry
            return result

        self.assertEqual(masked(replayed, self.venv), masked(plain, os.path.join(self.tmp, "plain-pip")),
                         "the previewed install differs from plain pip:\n" + tree_diff(replayed, plain))
        # ...and the bytecode replayed from the layer is still valid for its source (mtimes kept).
        torch_dir = os.path.join(self.site, "torch")
        for name in os.listdir(os.path.join(torch_dir, "__pycache__")):
            with open(os.path.join(torch_dir, "__pycache__", name), "rb") as f:
                header = f.read(16)
            source = os.stat(os.path.join(torch_dir, name.split(".")[0] + ".py"))
            self.assertEqual(int.from_bytes(header[8:12], "little"), int(source.st_mtime) & 0xFFFFFFFF, name)
            self.assertEqual(int.from_bytes(header[12:16], "little"), source.st_size & 0xFFFFFFFF, name)

        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.torch_version(), "2.11.0")

    def test_installer_failure_in_the_preview_changes_nothing(self):
        before = tree_hash(self.venv)
        proc = self.install("no-such-package==9", probe="import torch")
        self.assertEqual(proc.returncode, 2, self.said(proc))
        last = proc.stderr.strip().splitlines()[-1]
        self.assertRegex(last, r"^venvtx: pip install exited with status 1 .*the live venv was never changed \(tx 1 aborted\)")
        self.assertNotIn("\n", proc.stderr.strip().split("venvtx: ", 1)[1], "venvtx's verdict is one line")
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()
        self.assertEqual(self.tx(1)["state"], "aborted")


class PreviewedRun(PreviewCase):
    """Watched-command escapes, under --preview always: each is captured exactly (the effect lands
    in the live venv, and rollback restores the before-tree byte for byte) or refused.

    "The effect lands" is checked against a reference: the same command run plainly (no venvtx)
    on a copy of the before-state; the live venv after the previewed run must equal it."""

    def run_in_preview(self, script_for, cwd_in_site=None):
        """script_for(venv, site, scratch) -> a sh script. Returns the transaction's JSON."""
        self.before = tree_hash(self.venv)
        reference = os.path.join(self.tmp, "reference")
        subprocess.run(["cp", "-a", self.venv, reference], check=True)
        ref_site = os.path.join(reference, self.rel_site)
        os.mkdir(os.path.join(self.tmp, "ref-scratch"))
        plain = subprocess.run(["sh", "-c", script_for(reference, ref_site, os.path.join(self.tmp, "ref-scratch"))],
                               capture_output=True, text=True, env=dict(self.env, VIRTUAL_ENV=reference),
                               cwd=os.path.join(ref_site, cwd_in_site) if cwd_in_site else self.tmp)
        self.assertEqual(plain.returncode, 0, "the command itself fails: " + plain.stderr)
        self.expected = tree_hash(reference)
        self.assertNotEqual(self.expected, self.before, "the command changes nothing")

        os.mkdir(os.path.join(self.tmp, "scratch"))
        proc, doc = self.venvtx_json("run", "--preview", "always", "--probe", "import sys", "--", "sh", "-c",
                                     script_for(self.venv, self.site, os.path.join(self.tmp, "scratch")),
                                     cwd=os.path.join(self.site, cwd_in_site) if cwd_in_site else None)
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["kind"], doc["state"], doc["preview"]), ("run", "committed", {"used": True}))
        self.assertTrue(doc["probe"]["passed"])
        self.assertNoPreviewLeft()
        self.assertEqual(os.listdir(os.path.join(self.tmp, "scratch")), [])
        after = tree_hash(self.venv)
        if after != self.expected:
            self.fail("the live venv is not what the command makes when run plainly (temp dir %s); "
                      "reference -> live:\n%s" % (self.tmp, tree_diff(self.expected, after)))
        return doc

    def rolls_back_exactly(self):
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertTreeEqual(self.before, tree_hash(self.venv))

    def read(self, *parts):
        with open(os.path.join(self.site, *parts), "rb") as f:
            return f.read()

    def test_file_renamed_out_edited_and_moved_back(self):
        def script(venv, site, scratch):
            target, outside = os.path.join(site, "flash_attn", "__init__.py"), os.path.join(scratch, "outside.py")
            return ("mv '{t}' '{o}' && echo '# edited outside' >> '{o}' && mv '{o}' '{t}'"
                    .format(t=target, o=outside))
        doc = self.run_in_preview(script)
        self.assertEqual(self.read("flash_attn", "__init__.py"), b'__version__ = "2.8.3"\n# edited outside\n')
        self.assertEqual((doc["files"]["added"], doc["files"]["removed"], doc["files"]["modified"]), (0, 0, 1))
        self.rolls_back_exactly()

    def test_directory_renamed_over_a_removed_directory(self):
        doc = self.run_in_preview(lambda venv, site, scratch: (
            "cd '%s' && mkdir -p newfa/sub && echo 'v = 9' > newfa/__init__.py && "
            "echo 'z = 1' > newfa/sub/z.py && rm -rf flash_attn && mv -T newfa flash_attn" % site))
        found = sorted(os.path.relpath(os.path.join(d, n), self.site)
                       for d, dirs, files in os.walk(os.path.join(self.site, "flash_attn")) for n in dirs + files)
        self.assertEqual(found, ["flash_attn/__init__.py", "flash_attn/sub", "flash_attn/sub/z.py"])
        self.assertEqual(self.read("flash_attn", "__init__.py"), b"v = 9\n")
        # ops/__init__.py, ops/__pycache__/*.pyc and __pycache__/*.pyc gone; sub/z.py new.
        self.assertEqual((doc["files"]["added"], doc["files"]["removed"], doc["files"]["modified"]), (1, 3, 1))
        self.rolls_back_exactly()

    def test_package_stashed_replaced_and_stash_removed(self):
        # pip's upgrade of a directory: renamed away whole, a new one made (with a subdirectory of
        # the same name as an old one), the stash deleted. Nothing of the old jit/ may survive.
        self.run_in_preview(lambda venv, site, scratch: (
            "cd '%s' && mv flashinfer fi.stash && mkdir -p flashinfer/jit && "
            "echo 'v = 2' > flashinfer/__init__.py && echo 'j = 1' > flashinfer/jit/new.py && "
            "rm -r fi.stash" % site))
        self.assertEqual(sorted(os.listdir(os.path.join(self.site, "flashinfer", "jit"))), ["new.py"])
        self.rolls_back_exactly()

    def renamed_by_python(self, body):
        """A script running `body` in the venv's python with os, shutil and `site` at hand: its
        renames are os.rename's, with no copy to fall back on (mv and pip's stash have one)."""
        def script(venv, site, scratch):
            code = "import os, shutil; site = %r; %s" % (site, body)
            return "'%s' -c \"%s\"" % (os.path.join(venv, "bin", "python"), code)
        return script

    def test_package_stashed_by_a_rename_replaced_and_stash_removed(self):
        # pip's stash is a rename; in a view that refused to rename a directory of the live
        # venv (EXDEV), pip copied the whole package instead.
        self.run_in_preview(self.renamed_by_python(
            "os.rename(site + '/flashinfer', site + '/~lashinfer'); os.makedirs(site + '/flashinfer/jit'); "
            "open(site + '/flashinfer/__init__.py', 'w').write('v = 2'); shutil.rmtree(site + '/~lashinfer')"))
        self.assertEqual(sorted(os.listdir(os.path.join(self.site, "flashinfer"))), ["__init__.py", "jit"])
        self.rolls_back_exactly()

    def test_packages_renamed_and_kept_then_changed_inside(self):
        # Kept under their new names (the layer holds only where they came from until venvtx
        # makes them whole), one moved into the other, files edited, removed and added in both.
        self.run_in_preview(self.renamed_by_python(
            "os.rename(site + '/flashinfer', site + '/fi_moved'); "
            "os.rename(site + '/flash_attn', site + '/fi_moved/fa_inside'); "
            "open(site + '/fi_moved/__init__.py', 'a').write('# edited'); "
            "shutil.rmtree(site + '/fi_moved/jit'); open(site + '/fi_moved/fa_inside/new.py', 'w').write('n = 1')"))
        self.assertFalse(os.path.exists(os.path.join(self.site, "flashinfer")))
        self.rolls_back_exactly()

    def test_package_removed_and_recreated_with_a_subdirectory(self):
        # The same without a rename: rm -rf, then mkdir -p of the old subdirectory's name.
        self.run_in_preview(lambda venv, site, scratch: (
            "cd '%s' && rm -rf flashinfer && mkdir -p flashinfer/jit && "
            "echo 'v = 2' > flashinfer/__init__.py && echo 'j = 1' > flashinfer/jit/new.py" % site))
        self.assertEqual(sorted(os.listdir(os.path.join(self.site, "flashinfer", "jit"))), ["new.py"])
        self.rolls_back_exactly()

    def test_same_size_rewrite_keeping_mtime(self):
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        old = os.stat(target)
        code = ("import os, sys; p = sys.argv[1]; st = os.stat(p); d = open(p, 'rb').read(); "
                "n = d.replace(b'0.5.2', b'9.9.9'); assert len(n) == len(d) and n != d; "
                "fd = os.open(p, os.O_WRONLY); os.write(fd, n); os.close(fd); "
                "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))")
        doc = self.run_in_preview(lambda venv, site, scratch: "'%s' -c \"%s\" '%s'" % (
            os.path.join(venv, "bin", "python"), code, os.path.join(site, "flashinfer", "__init__.py")))
        self.assertEqual((doc["files"]["added"], doc["files"]["removed"], doc["files"]["modified"]), (0, 0, 1))
        new = os.stat(target)
        self.assertEqual(self.read("flashinfer", "__init__.py"), b'__version__ = "9.9.9"\n')
        self.assertEqual((new.st_size, new.st_mtime_ns), (old.st_size, old.st_mtime_ns))
        self.rolls_back_exactly()

    def test_chroot_into_the_venv(self):
        if os.geteuid() != 0:
            self.skipTest("chroot needs root")
        rel = self.rel_site

        def script(venv, site, scratch):
            code = "import os; os.chroot(%r); os.chdir('/'); open('/%s/chrooted.py', 'w').write('x = 1')" % (venv, rel)
            return "%s -c \"%s\"" % (sys.executable, code)
        self.run_in_preview(script)
        self.assertEqual(self.read("chrooted.py"), b"x = 1")
        self.rolls_back_exactly()

    def test_writes_through_proc_self_cwd_and_dotdot(self):
        # venvtx itself starts with its cwd inside the venv too: the command's relative paths must
        # reach the view, not the live venv.
        doc = self.run_in_preview(lambda venv, site, scratch: (
            "echo 'A = 1' > ../flash_attn/a.py && echo 'B = 1' > /proc/self/cwd/b.py && "
            "cd ops && echo 'C = 1' > ../../flash_attn/ops/../c.py && "
            "echo 'D = 1' > /proc/self/cwd/../../../site-packages/flash_attn/ops/d.py"), cwd_in_site="flash_attn")
        self.assertEqual((doc["files"]["added"], doc["files"]["removed"], doc["files"]["modified"]), (4, 0, 0))
        for name, content in (("a.py", b"A = 1\n"), ("b.py", b"B = 1\n"), ("c.py", b"C = 1\n"), ("ops/d.py", b"D = 1\n")):
            self.assertEqual(self.read("flash_attn", name), content)
        self.rolls_back_exactly()

    def test_the_store_and_the_lock_are_out_of_reach(self):
        self.make_store()
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        before = tree_hash(self.venv)
        objects = sorted(self.stored_files())
        self.assertGreater(len(objects), 0)
        store = os.path.join(self.venv, ".venvtx")
        lock = os.path.join(self.venv, ".lock")
        lock_before = os.lstat(lock) if os.path.lexists(lock) else None
        result = os.path.join(self.venv, "bin", "store-attack-result")
        proc, doc = self.venvtx_json("run", "--preview", "always", "--probe", "import sys", "--", "sh", "-c",
            "rm -rf '{s}' 2>/dev/null; r1=$?; touch '{s}/objects/evil' 2>/dev/null; r2=$?; "
            "mkdir '{s}/x' 2>/dev/null; r3=$?; n=$(ls -A '{s}' | wc -l); "
            "echo attacked >> '{l}' 2>/dev/null; "
            "echo \"$r1 $r2 $r3 $n\" > '{r}'".format(s=store, l=lock, r=result))
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": True}))
        with open(result) as f:
            r1, r2, r3, n = f.read().split()
        self.assertNotEqual(r1, "0", "rm -rf of the store succeeded inside the view")
        self.assertNotEqual(r2, "0", "a file was created in the store inside the view")
        self.assertNotEqual(r3, "0", "a directory was created in the store inside the view")
        self.assertEqual(n, "0", "the store was visible inside the view")
        self.assertFalse(os.path.exists(os.path.join(store, "objects", "evil")))
        self.assertFalse(os.path.exists(os.path.join(store, "x")))
        self.assertEqual(sorted(self.stored_files()), objects)
        if lock_before is not None:
            lock_after = os.lstat(lock)
            self.assertEqual((lock_after.st_ino, lock_after.st_size), (lock_before.st_ino, lock_before.st_size))
        with open(lock, "rb") as f:
            self.assertNotIn(b"attacked", f.read())
        after = tree_hash(self.venv)
        self.assertEqual(sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)),
                         ["bin/store-attack-result"], "the command's only effect")
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        proc, log = self.venvtx_json("log")
        self.assertEqual([(t["id"], t["kind"], t["state"]) for t in log],
                         [(4, "run", "committed"), (3, "remove", "committed"), (2, "rollback", "committed"),
                          (1, "remove", "undone")])
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertTreeEqual(before, tree_hash(self.venv))


class WhatIf(PreviewCase):
    def setUp(self):
        super().setUp()
        self.tmpdir = os.path.join(self.tmp, "tmpdir")
        os.mkdir(self.tmpdir)
        self.env["TMPDIR"] = self.tmpdir

    def assertNothingLeft(self, before):
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertFalse(os.path.lexists(os.path.join(self.venv, ".venvtx")), "a what-if created the store")
        self.assertEqual([n for n in os.listdir(self.tmpdir) if n.startswith("venvtx")], [])

    def test_failing_what_if(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", NVIDIA, "--dry-run", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn("probe (in a private view) FAILED: ImportError: libcusparseLt.so.0", proc.stdout)
        self.assertIn("what-if: the removal would FAIL the probe; nothing changed", proc.stdout)
        self.assertNothingLeft(before)

    def test_passing_what_if(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn", "--dry-run", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertIn("what-if: the removal would pass the probe; nothing changed", proc.stdout)
        self.assertNothingLeft(before)

    def test_json_what_if(self):
        before = tree_hash(self.venv)
        for pattern, rc, passed in ((NVIDIA, 3, False), ("flash-attn", 0, True)):
            proc, doc = self.venvtx_json("remove", pattern, "--dry-run", "--probe", "import torch")
            self.assertEqual(proc.returncode, rc, self.said(proc))
            self.assertTrue(doc["dry_run"])
            self.assertEqual(doc["preview"], {"used": True})
            self.assertTrue(doc["baseline"]["passed"])
            self.assertEqual(doc["probe"]["passed"], passed)
            self.assertIn("packages", doc)
            self.assertNothingLeft(before)

    def test_install_and_run_what_ifs(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("install", "--installer", "pip", "torch==2.12.0", "--dry-run", "--probe", "import torch",
                           *self.wheel_args)
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertIn("what-if: pip install would FAIL the probe; nothing changed", proc.stdout)
        self.assertNothingLeft(before)
        touch = "echo 'x = 1' > \"$VIRTUAL_ENV/%s/whatif.py\"" % self.rel_site
        proc, doc = self.venvtx_json("run", "--dry-run", "--no-baseline", "--probe", "import whatif", "--", "sh", "-c",
                                     touch)
        self.assertEqual(proc.returncode, 0, self.said(proc))  # the probe sees the command's file in the view
        self.assertEqual((doc["preview"], doc["probe"]["passed"]), ({"used": True}, True))
        self.assertNothingLeft(before)
        proc = self.venvtx("run", "--dry-run", "--probe", "import sys", "--", "false")
        self.assertEqual(proc.returncode, 2, self.said(proc))
        self.assertIn("what-if: false failed in the preview: false exited with status 1", proc.stdout)
        self.assertNothingLeft(before)

    def test_what_if_with_a_store_records_nothing(self):
        self.make_store()
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", NVIDIA, "--dry-run", "--probe", "import torch")
        self.assertEqual(proc.returncode, 3, self.said(proc))
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertNoPreviewLeft()
        proc, log = self.venvtx_json("log")
        self.assertEqual([t["id"] for t in log], [2, 1])


class LeftoverPreview(PreviewCase):
    def leave_one(self):
        area = os.path.join(self.previews, "12345")
        os.makedirs(os.path.join(area, "upper", "lib"))
        os.makedirs(os.path.join(area, "work", "work"))
        with open(os.path.join(area, "upper", "x"), "w") as f:
            f.write("left by a killed venvtx\n")
        os.chmod(os.path.join(area, "work", "work"), 0)  # as the kernel leaves it
        return area

    def test_recover_removes_a_leftover_preview(self):
        self.make_store()
        before = tree_hash(self.venv)
        self.leave_one()
        proc = self.venvtx("recover")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertFalse(os.path.lexists(self.previews), os.listdir(self.previews) if os.path.isdir(self.previews) else "")
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("verify").returncode, 0)

    def test_next_mutating_command_removes_it(self):
        self.make_store()
        self.leave_one()
        proc = self.venvtx("remove", "sglang")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertFalse(os.path.lexists(self.previews))

    def test_killed_during_a_preview(self):
        self.make_store()
        before = tree_hash(self.venv)
        tag = "61.%06d" % (os.getpid() % 1000000)
        proc = subprocess.Popen([VENVTX, "--venv", self.venv, "run", "--preview", "always",
                                 "--", "sh", "-c", "touch \"$VIRTUAL_ENV/bin/half\"; exec sleep " + tag],
                                cwd=self.tmp, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.kill_tagged, tag)
        area = os.path.join(self.previews, "%d-1" % proc.pid)  # <pid>-<n>: the process's first preview
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(area, "upper", "bin", "half")):
            self.assertIsNone(proc.poll(), "venvtx ended before the command ran")
            self.assertLess(time.time(), deadline, "no preview area %s" % area)
            time.sleep(0.05)
        self.assertFalse(os.path.lexists(os.path.join(self.venv, "bin", "half")))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.kill_tagged(tag)
        self.assertTrue(os.path.isdir(area))
        # A killed process lets go of its locks as it exits, which a loaded machine may not have
        # finished when kill() returns: recover may wait for that.
        recover = self.venvtx("recover", "--wait", "30")
        self.assertEqual(recover.returncode, 0, self.said(recover))
        self.assertFalse(os.path.lexists(self.previews))
        self.assertTreeEqual(before, tree_hash(self.venv))

    @staticmethod
    def kill_tagged(tag):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/cmdline" % entry, "rb") as f:
                        args = f.read().split(b"\0")
                    if tag.encode() in args:
                        os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    pass


class PreviewFlags(PreviewCase):
    def test_bogus_preview_mode(self):
        for args in (["remove", "flash-attn"], ["install", "torch"], ["run"]):
            tail = ["--", "true"] if args[0] == "run" else []
            proc = self.venvtx(*args, "--preview", "bogus", "--probe", "import sys", *tail)
            self.assertOneLineError(proc, 2)
            self.assertIn("--preview", proc.stderr)
            self.assertIn("bogus", proc.stderr)
            self.assertFalse(os.path.lexists(os.path.join(self.venv, ".venvtx")), args)

    def test_preview_never_is_recorded(self):
        proc, doc = self.venvtx_json("remove", "flash-attn", "--preview", "never", "--probe", "import sys")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": False, "reason": "--preview never"}))
        proc, doc = self.venvtx_json("run", "--preview", "never", "--probe", "import sys", "--", "touch",
                                     os.path.join(self.venv, "new-file"))
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual(doc["preview"], {"used": False, "reason": "--preview never"})
        self.assertEqual(self.tx(1)["preview"], {"used": False, "reason": "--preview never"})

    def test_preview_always_without_a_probe(self):
        before = tree_hash(self.venv)
        proc, doc = self.venvtx_json("remove", "flash-attn", "--preview", "always")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        self.assertEqual((doc["state"], doc["preview"]), ("committed", {"used": True}))
        self.assertFalse(os.path.exists(os.path.join(self.site, "flash_attn")))
        self.assertNoPreviewLeft()
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))


if __name__ == "__main__":
    unittest.main()
