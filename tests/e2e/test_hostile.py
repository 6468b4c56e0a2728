"""Off the beaten path (issue 22): numbers out of range, bytes that are not UTF-8, a change that
takes pyvenv.cfg away. Each case was seen to lose data, wedge the venv or lie; each test checks
the tree with its own hash (full_tree_hash: content, type, mode, owner, mtime, xattrs, nlink,
allocated blocks), never with venvtx's word."""
import json
import os
import shutil
import sqlite3
import stat
import struct
import subprocess
import time

from support import VENVTX, ExternalStoreMixin, VenvTestCase, flat, mount_tmpfs, tree_hash


def full_tree_hash(root, skip_top=(".venvtx", ".lock")):
    """path (bytes) -> every fact a restore must keep: type, mode, uid, gid, size, mtime_ns,
    content or link target, xattrs, nlink (the store's holds not counted), st_blocks. Directories
    leave out mtime (a restore recreates their entries) and size."""
    import hashlib
    result = {}
    root_b = os.fsencode(root)
    held = {}  # the store's holds: a second name of a venv file (store/holds.hpp), not the venv's
    for dirpath, _, filenames in os.walk(os.path.join(root_b, b".venvtx", b"holds")):
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            held[(st.st_dev, st.st_ino)] = held.get((st.st_dev, st.st_ino), 0) + 1
    for dirpath, dirnames, filenames in os.walk(root_b):
        rel_dir = os.path.relpath(dirpath, root_b)
        if rel_dir == b".":
            dirnames[:] = [d for d in dirnames if os.fsdecode(d) not in skip_top]
            filenames = [f for f in filenames if os.fsdecode(f) not in skip_top]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            facts = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid]
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    facts += [st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest(),
                              st.st_nlink - held.get((st.st_dev, st.st_ino), 0), st.st_blocks]
            elif stat.S_ISLNK(st.st_mode):
                facts.append(os.readlink(path))
            try:
                names = sorted(os.listxattr(path, follow_symlinks=False))
                facts.append([(n, os.getxattr(path, n, follow_symlinks=False)) for n in names])
            except OSError:
                facts.append(None)
            result[os.path.normpath(os.path.join(rel_dir, name))] = tuple(facts)
    return result


class Numbers(VenvTestCase):
    """Every number is parsed with its range: out of range is exit 2, one line, nothing changed."""

    def setUp(self):
        super().setUp()
        for name in ("sglang", "flash-attn"):
            self.assertEqual(self.venvtx("remove", name).returncode, 0)

    def index_rows(self):
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            return (db.execute("SELECT id, state, pruned_from FROM transactions ORDER BY id").fetchall(),
                    # what the user saved (holds.method is the holds' own record of how they were made)
                    db.execute("SELECT name, value FROM settings WHERE name != 'holds.method' ORDER BY name").fetchall())
        finally:
            db.close()

    def test_durations_and_sizes_past_their_range_prune_nothing(self):
        for args in (["--older-than", "16000000000000w"], ["--older-than", "1e18w"],
                     ["--set-policy", "--older-than", "1e18w"], ["--max-size", "20000000T"],
                     ["--set-policy", "--keep", "3", "--max-size", "20000000T"]):
            with self.subTest(args=args):
                before, tree = self.index_rows(), full_tree_hash(self.venv)
                proc = self.venvtx("gc", *args)
                self.assertOneLineError(proc, 2)
                self.assertEqual(before, self.index_rows(), proc.stdout)
                self.assertEqual(tree, full_tree_hash(self.venv))

    def test_a_policy_that_keeps_nothing_is_never_saved(self):
        for args in (["--keep", "0"], ["--older-than", "0s"], ["--older-than", "0.1s"]):
            with self.subTest(args=args):
                before = self.index_rows()
                proc = self.venvtx("gc", "--set-policy", *args)
                self.assertOneLineError(proc, 2)
                self.assertIn("--set-policy", proc.stderr)
                self.assertEqual(before, self.index_rows())
        # The one-off run may still prune everything: the user asked for it, and nothing is saved.
        proc = self.venvtx("gc", "--keep", "0")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.index_rows()[1], [])

    def test_a_policy_saved_out_of_range_by_an_older_venvtx_prunes_nothing(self):
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        with db:
            for name, value in (("keep_last", "none"), ("keep_seconds", "-9223372036854775808"),
                                ("max_bytes", "none"), ("automatic", "1")):
                db.execute("INSERT INTO settings (name, value) VALUES (?, ?) "
                           "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (name, value))
        db.close()
        before = full_tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "flashinfer-python").returncode, 0)
        transactions = self.index_rows()[0]
        self.assertEqual([row[1] for row in transactions], ["committed"] * 3, transactions)
        self.assertEqual([row[2] for row in transactions], [None] * 3, "pruned by a poisoned policy")
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        after = full_tree_hash(self.venv)
        self.assertEqual(sorted(before), sorted(after))
        self.assertEqual(tree_hash_of_facts(before), tree_hash_of_facts(after))

    def test_seconds_and_counts_past_their_range(self):
        tree = full_tree_hash(self.venv)
        for args in (["remove", "flashinfer-python", "--probe", "import sys", "--probe-timeout", "1e16"],
                     ["remove", "flashinfer-python", "--probe-timeout", "inf"],
                     ["remove", "flashinfer-python", "--wait", "1e300"],
                     ["remove", "flashinfer-python", "--keep-going", "--jobs", "100000"],
                     ["probe", "--probe-timeout", "1e16", "--probe", "import sys"],
                     ["recover", "--wait", "nan"],
                     ["log", "-n", "99999999999999999999"],
                     ["log", "-n", "0"]):
            with self.subTest(args=args):
                proc = self.venvtx(*args)
                self.assertOneLineError(proc, 2)
                self.assertEqual(tree, full_tree_hash(self.venv))


def tree_hash_of_facts(tree):
    """The facts a rollback restores for a path that was removed and put back (it is a new
    directory entry: directories' link counts and files' blocks stay as the filesystem made them)."""
    return {path: facts[:2] + facts[4:7] if facts[0] == stat.S_IFREG else facts[:2]
            for path, facts in tree.items()}


class GcDryRun(VenvTestCase):
    """A size rule weighs what a removal staged without hashing: the dry run as the real run."""

    def test_a_size_rule_dry_run_prunes_what_the_real_run_prunes(self):
        for name in ("sglang", "flash-attn"):
            self.assertEqual(self.venvtx("remove", name).returncode, 0)
        proc, dry = self.venvtx_json("gc", "--dry-run", "--max-size", "1K")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc, real = self.venvtx_json("gc", "--max-size", "1K")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(real["pruned"], [1])
        for field in ("pruned", "freed_objects", "freed_bytes"):
            self.assertEqual(dry[field], real[field], field)


class AnyBytes(VenvTestCase):
    """Names and probe output that are not UTF-8 go through text and JSON (PEP 383 escapes)."""

    PROBE = "import os; os.write(2, b'caf\\xe9 \\xff\\n')"

    def test_a_passing_probe_that_prints_latin1_commits_in_place_and_previewed(self):
        for preview in ("never", "auto"):
            with self.subTest(preview=preview):
                before = tree_hash(self.venv)
                proc, tx = self.venvtx_json("remove", "flash-attn", "--preview", preview, "--probe", self.PROBE)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(tx["state"], "committed")
                proc, log = self.venvtx_json("log")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual([t["state"] for t in log if t["id"] == tx["id"]], ["committed"])
                self.assertEqual(self.venvtx("show", str(tx["id"])).returncode, 0)
                proc = self.venvtx("rollback")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTreeEqual(before, tree_hash(self.venv))

    def test_a_failing_probe_with_latin1_output_restores_and_reports_in_json(self):
        probe = "import os; os.write(2, b'\\xe9chec\\n'); raise SystemExit(7)"
        for preview in ("never", "auto"):
            with self.subTest(preview=preview):
                before = full_tree_hash(self.venv)
                proc, tx = self.venvtx_json("remove", "flash-attn", "--no-baseline", "--preview", preview,
                                            "--probe", probe)
                self.assertEqual(proc.returncode, 3, proc.stderr)
                self.assertIn(tx["state"], ("rolled_back", "aborted"))
                self.assertEqual(before, full_tree_hash(self.venv))
                self.assertEqual(self.venvtx_json("log")[0].returncode, 0)

    def test_an_installer_that_is_not_utf8_blocks_nothing(self):
        # pip's test_uninstall parametrises INSTALLER b"\xc0\xff\xee": it is data, never a crash
        dist_info = [d for d in os.listdir(self.site) if d.startswith("sglang-") and d.endswith(".dist-info")][0]
        with open(os.path.join(self.site, dist_info, "INSTALLER"), "wb") as f:
            f.write(b"\xc0\xff\xee\n")
        before = tree_hash(self.venv)
        for name in ("flash-attn", "sglang"):  # an unrelated package, then the one itself
            proc = self.venvtx("remove", name)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for args in (["log"], ["--json", "log"], ["status"], ["freeze"]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for _ in range(2):
            self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(tree_hash(self.venv), before)

    def test_a_file_name_that_is_not_utf8_round_trips_through_show_json(self):
        name = b"caf\xe9.txt"
        site = os.fsencode(self.site)
        before = full_tree_hash(self.venv)
        code = "import os, sys; open(os.path.join(os.fsencode(sys.argv[1]), %r), 'wb').write(b'x')" % name
        proc = self.venvtx("run", "--preview", "never", "--", os.path.join(self.venv, "bin", "python"),
                           "-c", code, self.site)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(os.path.exists(os.path.join(site, name)))
        proc, shown = self.venvtx_json("show", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        paths = [os.fsencode(entry["path"]) for entry in shown["paths"]]
        self.assertTrue(any(path.endswith(b"/" + name) for path in paths), paths)
        proc = subprocess.run([*self.venvtx_cmd(), "log", "--json"], capture_output=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        flat(json.loads(proc.stdout))
        self.assertEqual(self.venvtx("show", "1").returncode, 0)
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(site, name)))
        self.assertEqual(tree_hash_of_facts(before), tree_hash_of_facts(full_tree_hash(self.venv)))

    def venvtx_cmd(self):
        from support import VENVTX
        return [VENVTX, "--venv", self.venv]


class NeverWedged(VenvTestCase):
    """A change that takes pyvenv.cfg away stays visible and undoable: the store knows its venv."""

    def test_a_command_that_deletes_pyvenv_cfg_can_be_rolled_back(self):
        before = full_tree_hash(self.venv)
        cfg = os.path.join(self.venv, "pyvenv.cfg")
        for preview in ("never", "auto"):
            with self.subTest(preview=preview):
                proc = self.venvtx("run", "--preview", preview, "--", "rm", cfg)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertFalse(os.path.exists(cfg))
                for args in (["log"], ["recover"], ["verify"]):
                    proc = self.venvtx(*args)
                    self.assertNotIn("not a venv", proc.stderr, args)
                proc = self.venvtx("rollback")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(os.path.exists(cfg))
                self.assertEqual(tree_hash_of_facts(before), tree_hash_of_facts(full_tree_hash(self.venv)))

    def test_without_a_history_a_directory_without_pyvenv_cfg_is_still_no_venv(self):
        os.unlink(os.path.join(self.venv, "pyvenv.cfg"))
        proc = self.venvtx("log")
        self.assertOneLineError(proc, 2)
        self.assertIn("not a venv", proc.stderr)

    def test_a_watched_command_may_take_the_venv_lock_itself(self):
        # uv takes <venv>/.lock; so does a command that runs uv (`sh -c 'uv pip install ...'`).
        take = ("import fcntl, sys; f = open(sys.argv[1], 'a'); "
                "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); open(sys.argv[2], 'w').write('locked')")
        marker = os.path.join(self.site, "took_the_lock.txt")
        proc = self.venvtx("run", "--preview", "never", "--", os.path.join(self.venv, "bin", "python"), "-c", take,
                           os.path.join(self.venv, ".lock"), marker, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(os.path.exists(marker))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertFalse(os.path.exists(marker))


class Interrupted(VenvTestCase):
    """Ctrl-C while a probe runs says nothing about the venv: never "already fails the probe"."""

    def interrupt_when(self, marker, *args):
        from support import VENVTX
        import signal
        import time
        proc = subprocess.Popen([VENVTX, "--venv", self.venv, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.tmp)
        deadline = time.monotonic() + 60
        while not os.path.exists(marker) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(marker), "the probe never started")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out + err

    def test_during_the_baseline_probe_nothing_changes(self):
        marker = os.path.join(self.tmp, "probing")
        probe = "import pathlib, time; pathlib.Path(%r).touch(); time.sleep(60)" % marker
        before = full_tree_hash(self.venv)
        code, text = self.interrupt_when(marker, "remove", "flash-attn", "--preview", "never", "--probe", probe)
        self.assertEqual(code, 130, text)
        self.assertNotIn("already fails", text)
        self.assertIn("interrupted during the baseline probe", text)
        self.assertEqual(before, full_tree_hash(self.venv))
        proc, log = self.venvtx_json("log")
        self.assertEqual(log[0]["state"], "aborted")  # newest first

    def test_during_the_probe_after_the_change_the_venv_is_restored(self):
        marker = os.path.join(self.tmp, "probing")
        probe = ("import importlib.util, pathlib, time\n"
                 "if importlib.util.find_spec('flash_attn') is None:\n"
                 "    pathlib.Path(%r).touch(); time.sleep(60)" % marker)
        before = full_tree_hash(self.venv)
        code, text = self.interrupt_when(marker, "remove", "flash-attn", "--preview", "never", "--probe", probe)
        self.assertEqual(code, 130, text)
        self.assertIn("interrupted during the probe", text)
        self.assertEqual(tree_hash_of_facts(before), tree_hash_of_facts(full_tree_hash(self.venv)))
        proc, log = self.venvtx_json("log")
        self.assertEqual(log[0]["state"], "rolled_back")  # newest first

    def test_during_a_previewed_probe_it_says_so_and_records_it(self):
        """Issue 40, item 11: in a preview (the default with a probe) Ctrl-C reached only venvtx,
        which died silently: no message, no JSON, no history entry."""
        marker = os.path.join(self.tmp, "probing")
        probe = "import pathlib, time; pathlib.Path(%r).touch(); time.sleep(60)" % marker
        before = full_tree_hash(self.venv)
        for json_flag in ([], ["--json"]):
            os.path.exists(marker) and os.unlink(marker)
            code, text = self.interrupt_when(marker, *json_flag, "remove", "flash-attn", "--preview", "always",
                                             "--probe", probe)
            self.assertEqual(code, 130, text)
            if json_flag:
                error = json.loads(text[:text.rindex("}") + 1])["error"]
                self.assertEqual((error["kind"], error["exit_code"]), ("interrupted", 130), text)
            else:
                self.assertIn("interrupted during the preview: the live venv was never changed", text)
            self.assertEqual(before, full_tree_hash(self.venv))
            proc, log = self.venvtx_json("log")
            self.assertEqual((log[0]["state"], log[0]["kind"]), ("aborted", "remove"), log[0])
        self.assertEqual(os.listdir(os.path.join(self.venv, ".venvtx", "preview")) if
                         os.path.exists(os.path.join(self.venv, ".venvtx", "preview")) else [], [])


class Locks(VenvTestCase):
    def test_a_symlinked_venv_lock_is_a_one_line_refusal(self):
        target = os.path.join(self.tmp, "elsewhere.lock")
        open(target, "w").close()
        lock = os.path.join(self.venv, ".lock")
        if os.path.lexists(lock):
            os.unlink(lock)
        os.symlink(target, lock)
        before = full_tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertOneLineError(proc, 2)
        self.assertIn("symbolic link", proc.stderr)
        self.assertEqual(before, full_tree_hash(self.venv))

    def test_verify_waits_its_turn_instead_of_reading_a_store_in_motion(self):
        import fcntl
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        with open(os.path.join(self.venv, ".venvtx", "lock"), "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            proc = self.venvtx("verify")
            self.assertOneLineError(proc, 5)
        proc = self.venvtx("verify", "--wait", "5")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


class UvShaped(VenvTestCase):
    """uv installs by hard link from its cache: a removal keeps such files by rename (no copy),
    and a write through the cache's name is caught, never restored as if it were the capture."""

    def make_uv_shaped(self, dist_prefix):
        dist_info = [d for d in os.listdir(self.site) if d.startswith(dist_prefix) and d.endswith(".dist-info")][0]
        with open(os.path.join(self.site, dist_info, "INSTALLER"), "w") as f:
            f.write("uv\n")
        cache = os.path.join(self.tmp, "uv-cache", "archive-v0", "Xa1b2c3d4")
        linked = {}
        with open(os.path.join(self.site, dist_info, "RECORD")) as f:
            for line in f:
                rel = line.rsplit(",", 2)[0]
                source = os.path.normpath(os.path.join(self.site, rel))
                if not os.path.isfile(source) or os.path.islink(source):
                    continue
                target = os.path.join(cache, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.link(source, target)
                linked[source] = target
        self.assertTrue(linked)
        return linked

    def staged_inodes(self):
        staging = os.path.join(self.venv, ".venvtx", "staging")
        return {os.lstat(os.path.join(d, f)).st_ino for d, _, files in os.walk(staging) for f in files}

    def test_removal_keeps_uv_links_by_rename_and_rolls_back_exactly(self):
        linked = self.make_uv_shaped("flash_attn")
        before = full_tree_hash(self.venv)
        cache_inodes = {os.lstat(target).st_ino for target in linked.values()}
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(cache_inodes <= self.staged_inodes(), "a uv-linked file was copied, not renamed")
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(before, full_tree_hash(self.venv))
        for source, target in linked.items():
            self.assertEqual(os.lstat(source).st_ino, os.lstat(target).st_ino, source)

    def test_a_write_through_the_cache_name_is_refused_by_name(self):
        linked = self.make_uv_shaped("flash_attn")
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        source = os.path.join(self.site, "flash_attn", "__init__.py")
        target = linked[source]
        with open(target, "r+b") as f:  # in place, same size: only the inode's ctime tells
            data = f.read()
            f.seek(0)
            f.write(bytes(b ^ 0xFF for b in data[:1]) + data[1:])
        after_removal = full_tree_hash(self.venv)
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn(os.path.relpath(source, self.venv), proc.stderr)
        self.assertEqual(after_removal, full_tree_hash(self.venv))

    def test_gc_stores_a_private_copy(self):
        linked = self.make_uv_shaped("flash_attn")
        cache_inodes = {os.lstat(target).st_ino for target in linked.values()}
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.assertEqual(self.venvtx("gc").returncode, 0)
        objects = {os.lstat(path).st_ino for path in self.object_files()}
        self.assertFalse(cache_inodes & objects, "an object shares its inode with uv's cache")
        before_rollback = self.venvtx("rollback")
        self.assertEqual(before_rollback.returncode, 0, before_rollback.stderr)

    def test_a_pip_installed_file_with_a_second_name_is_still_copied(self):
        dist_info = [d for d in os.listdir(self.site) if d.startswith("flash_attn") and d.endswith(".dist-info")][0]
        with open(os.path.join(self.site, dist_info, "INSTALLER")) as f:
            self.assertNotEqual(f.read().strip(), "uv")
        init = os.path.join(self.site, "flash_attn", "__init__.py")
        outside = os.path.join(self.tmp, "second-name.py")
        os.link(init, outside)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.assertNotIn(os.lstat(outside).st_ino, self.staged_inodes())


class SealedView(VenvTestCase):
    """A previewed command, root included, cannot leave its view: not by umount, not through
    /proc/1/root, and so it can never touch the live venv or the store."""

    def test_a_command_that_unmounts_its_view_still_changes_only_the_view(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)  # the store has a removal to keep
        before = full_tree_hash(self.venv)
        store = os.path.join(self.venv, ".venvtx")
        staged = sorted(os.path.join(d, f) for d, _, files in os.walk(os.path.join(store, "staging")) for f in files)
        self.assertTrue(staged)
        flash = os.path.join(self.site, "flash_attn")
        script = ("umount -l {venv} 2>/dev/null; umount -l {venv} 2>/dev/null; "
                  "rm -rf /proc/1/root{flash} /proc/1/root{store}/staging 2>/dev/null; "
                  "rm -rf {flash} {store}/staging 2>/dev/null; exit 0").format(venv=self.venv, flash=flash, store=store)
        proc = self.venvtx("run", "--preview", "always", "--probe", "import flash_attn", "--", "sh", "-c", script)
        if "preview" in proc.stderr and proc.returncode == 2:
            self.skipTest("no private view here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual(before, full_tree_hash(self.venv), "the command reached the live venv")
        self.assertEqual(staged, sorted(os.path.join(d, f) for d, _, files in os.walk(os.path.join(store, "staging"))
                                        for f in files), "the command reached the store")
        self.assertEqual(self.venvtx("rollback").returncode, 0)


class ChangedOutside(VenvTestCase):
    """A change that reaches the live venv by another name than the transaction's is named
    (JSON `changed_outside`), never covered by "never changed" or "as it was before"."""

    def outside_name(self):
        inside = os.path.join(self.site, "flash_attn", "__init__.py")
        outside = os.path.join(self.tmp, "second-name.py")
        os.link(inside, outside)
        return os.path.relpath(inside, self.venv), outside

    def test_previewed_command_writing_through_a_hard_link_from_outside(self):
        rel, outside = self.outside_name()
        proc, tx = self.venvtx_json("run", "--preview", "always", "--no-baseline", "--probe", "import flash_attn", "--",
                                    "sh", "-c", "echo 'raise SystemExit(9)' >> " + outside)
        if proc.returncode == 2 and "preview" in proc.stderr:
            self.skipTest("no private view here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn({"path": rel, "change": "modified"}, tx.get("changed_outside", []), tx)
        self.assertNotIn("never changed", tx["message"])
        proc = self.venvtx("run", "--preview", "always", "--no-baseline", "--probe", "import flash_attn", "--",
                           "sh", "-c", "echo '# again' >> " + outside)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertNotIn("never changed", proc.stdout + proc.stderr)
        self.assertIn("changed the live venv outside its view", proc.stdout)
        self.assertEqual(1, (proc.stdout + proc.stderr).count(rel), proc.stdout + proc.stderr)
        proc = self.venvtx("run", "--preview", "always", "--probe", "import sys", "--",
                           "sh", "-c", "echo '# again' >> " + outside)
        self.assertIn("changed outside this transaction", proc.stdout)
        self.assertIn(rel, proc.stdout)

    def test_previewed_command_changing_the_venv_before_the_scan_reads_it(self):
        # The scan of the live venv runs beside a previewed command; here (VENVTX_HOOK=live_scan)
        # it starts only once the command has written through a second name and removed a file
        # through a bind mount: what it reads already holds both changes.
        if os.geteuid() != 0:
            self.skipTest("a bind mount needs root")
        rel, outside = self.outside_name()
        second_path = os.path.join(self.tmp, "second-path")
        os.makedirs(second_path)
        if subprocess.run(["mount", "--bind", self.venv, second_path]).returncode != 0:
            self.skipTest("could not bind-mount")
        self.addCleanup(subprocess.run, ["umount", "-l", second_path])
        gone = os.path.relpath(os.path.join(self.site, "flash_attn", "__pycache__", os.listdir(os.path.join(self.site, "flash_attn", "__pycache__"))[0]), self.venv)
        self.assertTrue(os.path.exists(os.path.join(self.venv, gone)))
        done = os.path.join(self.tmp, "command-done")
        wait = "for i in $(seq 200); do [ -e '%s' ] && break; sleep 0.05; done" % done
        proc, tx = self.venvtx_json("run", "--preview", "always", "--", "sh", "-c",
                                    "echo '# beside' >> '%s'; rm '%s'; touch '%s'"
                                    % (outside, os.path.join(second_path, gone), done),
                                    env=dict(self.env, VENVTX_HOOK="live_scan:" + wait))
        if proc.returncode == 2 and "preview" in proc.stderr:
            self.skipTest("no private view here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn({"path": rel, "change": "modified"}, tx.get("changed_outside", []), tx)
        self.assertIn({"path": os.path.dirname(gone), "change": "modified"}, tx.get("changed_outside", []), tx)

    def test_in_place_command_writing_through_a_hard_link_from_outside(self):
        rel, outside = self.outside_name()
        proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--",
                                    "sh", "-c", "echo '# outside' >> " + outside)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx.get("changed_outside"), [{"path": rel, "change": "modified"}], tx)

    def test_in_place_an_unseen_change_is_never_called_restored(self):
        # what the kernel changed that venvtx did not see (here a second name; a flipped path
        # alike) is named by the check after the command, and the restore says NOT restored
        rel, outside = self.outside_name()
        proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--no-baseline", "--probe",
                                    "raise SystemExit(1)", "--", "sh", "-c", "echo '# outside' >> " + outside)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertFalse(tx["restored"], tx)
        self.assertEqual(tx["unrestored"], [rel], tx)
        self.assertEqual(tx.get("changed_outside"), [{"path": rel, "change": "modified"}], tx)
        text = self.venvtx("run", "--preview", "never", "--capture", "touch", "--no-baseline", "--probe",
                           "raise SystemExit(1)", "--", "sh", "-c", "echo '# again' >> " + outside).stdout
        self.assertIn("NOT restored", text)
        self.assertNotIn("as it was before", text)

    def test_a_name_added_elsewhere_meanwhile_is_no_change(self):
        # uv linking its cache into another venv moves the link count (and ctime) of this one's files.
        import threading
        import time
        inside = os.path.join(self.site, "flash_attn", "__init__.py")
        linker = threading.Timer(0.5, os.link, (inside, os.path.join(self.tmp, "other-venv-name.py")))
        linker.start()
        started = time.monotonic()
        proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--", "sleep", "2")
        linker.join()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertGreater(time.monotonic() - started, 1.5)
        self.assertEqual(os.stat(inside).st_nlink, 3)  # its own name, the store's hold, the other venv's
        self.assertEqual(tx["changed_outside"], [], tx)

    def test_a_command_that_changes_only_its_own_paths_reports_nothing_outside(self):
        proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--",
                                    "sh", "-c", "rm -r " + os.path.join(self.site, "flash_attn"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["changed_outside"], [], tx)


class ExactMetadata(VenvTestCase):
    """What a previewed change leaves on live files is the command's doing alone: no overlayfs
    bookkeeping; and its user xattrs and sparseness arrive intact. What a rollback brings back
    keeps owner and xattrs, from a pack too, and root restoring another user's venv leaves
    nothing of its own there."""

    def test_a_previewed_edit_leaves_no_overlay_xattr_and_keeps_user_xattrs(self):
        target = os.path.join(self.site, "flash_attn", "__init__.py")
        sparse = os.path.join(self.site, "flash_attn", "blob.bin")
        script = ("import os, sys\n"
                  "t, s = sys.argv[1], sys.argv[2]\n"
                  "open(t, 'a').write('# edited\\n')\n"
                  "os.setxattr(t, 'user.venvtx.test', b'kept')\n"
                  "with open(s, 'wb') as f:\n"
                  "    f.truncate(10 * 1024 * 1024); f.seek(5000000); f.write(b'x')\n")
        proc = self.venvtx("run", "--preview", "always", "--probe", "import flash_attn", "--",
                           os.path.join(self.venv, "bin", "python"), "-c", script, target, sparse)
        if proc.returncode == 2 and "preview" in proc.stderr:
            self.skipTest("no private view here: " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        names = os.listxattr(target, follow_symlinks=False)
        self.assertEqual([n for n in names if ".overlay." in n], [], names)
        self.assertEqual(os.getxattr(target, "user.venvtx.test"), b"kept")
        st = os.stat(sparse)
        self.assertEqual(st.st_size, 10 * 1024 * 1024)
        self.assertLess(st.st_blocks * 512, 1024 * 1024, "the sparse file arrived dense")
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertFalse(os.path.exists(sparse))

    def mark(self, path):
        """A user xattr, a file capability (cap_net_bind_service) and another owner on `path`."""
        if os.geteuid() != 0:
            self.skipTest("file capabilities and owners need root")
        os.chown(path, 1234, 1234)
        os.setxattr(path, "user.venvtx.test", b"kept")
        os.setxattr(path, "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 10, 0, 0, 0))

    def test_a_rollback_from_a_pack_keeps_owner_and_xattrs(self):
        self.mark(os.path.join(self.site, "flash_attn", "__init__.py"))
        before = full_tree_hash(self.venv)
        for args in (["remove", "flash-attn"], ["gc", "--loose", "0"], ["rollback"]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
        self.assertEqual(before, full_tree_hash(self.venv))

    def test_root_restoring_another_users_venv_leaves_nothing_owned_by_root(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        subprocess.run(["chown", "-R", "%d:%d" % (NOBODY, NOBODY), self.venv], check=True)
        before = full_tree_hash(self.venv)
        for args in (["remove", "flash-attn", "sglang"], ["rollback"]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
        self.assertEqual(before, full_tree_hash(self.venv))
        lock = os.stat(os.path.join(self.venv, ".lock"))  # uv, run by that user, must open it
        self.assertEqual((lock.st_uid, lock.st_gid), (NOBODY, NOBODY))

    def test_a_directory_comes_back_with_its_own_owner_not_its_parents(self):
        # issue 41, item 7: directories were not journaled with their owner; a rollback made them
        # as their parent is (here root), in place and switched
        if os.geteuid() != 0:
            self.skipTest("needs root")
        for package in ("flash_attn", os.path.join("flash_attn", "ops")):
            os.chown(os.path.join(self.site, package), 1234, 4321)
        before = full_tree_hash(self.venv)
        for extra in ([], ["--preview", "never"]):
            for args in (["remove", "flash-attn", "--no-probe", *extra], ["rollback"]):
                proc = self.venvtx(*args, env=dict(self.env, **({"VENVTX_NO_EXCHANGE": "1"} if extra else {})))
                self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
            st = os.stat(os.path.join(self.site, "flash_attn", "ops"))
            self.assertEqual((st.st_uid, st.st_gid), (1234, 4321), extra)
            self.assertEqual(before, full_tree_hash(self.venv))


NOBODY = 65534


def as_nobody(case, venv, *args):
    """venvtx run as user nobody (the test runs as root), on `venv`."""
    cmd = ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
           "env", "HOME=" + case.tmp, VENVTX, "--venv", venv, *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=case.tmp, timeout=120)


class ReadOnlyStore(VenvTestCase):
    """Root's history, read by another user: every reading command works, every changing one
    is refused in one line, and nothing changes."""

    def test_another_user_reads_roots_history_and_changes_nothing(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (to become nobody)")
        os.chmod(self.tmp, 0o755)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        before = full_tree_hash(self.venv, skip_top=(".lock",))
        for args in (["log"], ["show", "1"], ["verify"], ["--json", "log"]):
            proc = as_nobody(self, self.venv, *args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
        self.assertEqual(flat(json.loads(as_nobody(self, self.venv, "--json", "log").stdout))[0]["id"], 1)
        for args in (["rollback"], ["remove", "flash-attn"], ["recover"], ["gc"]):
            proc = as_nobody(self, self.venv, *args)
            self.assertOneLineError(proc, 5)
            self.assertIn("read-only for this user", proc.stderr)
        self.assertEqual(before, full_tree_hash(self.venv, skip_top=(".lock",)))

    def test_another_user_sees_an_outside_change_it_cannot_record(self):
        # issue 40, item 11: log showed nothing of a plain pip uninstall to a user who cannot
        # write the store; it shows it, unrecorded, and says why
        if os.geteuid() != 0:
            self.skipTest("needs root (to become nobody)")
        os.chmod(self.tmp, 0o755)
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        pip = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", "uninstall", "-y", "-q",
                              "sglang"], capture_output=True, text=True, env=self.env)
        self.assertEqual(pip.returncode, 0, pip.stderr)
        proc = as_nobody(self, self.venv, "log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.startswith("changed outside venvtx since the last entry, not recorded "
                                               "(this user cannot write the store):\n  sglang: 0.5.5 → ∅"),
                        proc.stdout)
        document = json.loads(as_nobody(self, self.venv, "--json", "log").stdout)
        self.assertEqual([(d["name"], d["before"], d["after"]) for d in document["unrecorded"]["dists"]],
                         [("sglang", "0.5.5", None)], document["unrecorded"])
        self.assertEqual(len(document["transactions"]), 1)  # nothing recorded
        log = json.loads(self.venvtx("--json", "log").stdout)  # root records it
        self.assertEqual((log["unrecorded"], log["transactions"][0]["kind"]), (None, "outside"))


class ClosedByTheCommand(VenvTestCase):
    """Unprivileged, a previewed command that closes directories (`chmod -R a-w`) leaves a layer
    venvtx must still read, apply from and remove: applied when the probe passes, removed when
    it fails, and `gc` is never wedged by what is left."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"):
            self.skipTest("needs root (to become nobody) and a system python3 nobody can run")
        os.chmod(self.tmp, 0o755)
        self.own = os.path.join(self.tmp, "nobody-venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", self.own], check=True)
        site = [os.path.join(self.own, "lib", d, "site-packages") for d in os.listdir(os.path.join(self.own, "lib"))][0]
        self.pkg = os.path.join(site, "pkg")
        os.makedirs(os.path.join(self.pkg, "sub"))
        for rel in ("__init__.py", "sub/__init__.py"):
            with open(os.path.join(self.pkg, rel), "w") as f:
                f.write("x = 1\n")
        subprocess.run(["chown", "-R", "%d:%d" % (NOBODY, NOBODY), self.own], check=True)

    def as_nobody(self, *args):
        return as_nobody(self, self.own, *args)

    def previewed(self, probe, *command):
        proc = self.as_nobody("run", "--preview", "always", "--probe", probe, "--", *command)
        if "preview" in proc.stderr and "unavailable" in proc.stderr:
            self.skipTest("no user namespaces for nobody here: " + proc.stderr)
        return proc

    def test_a_passing_change_is_applied_and_nothing_is_left(self):
        before = full_tree_hash(self.own)
        proc = self.previewed("import pkg.sub", "chmod", "-R", "a-w", self.pkg)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(self.pkg).st_mode), 0o555)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.pkg, "sub", "__init__.py")).st_mode), 0o444)
        self.assertEqual([], [n for n in os.listxattr(os.path.join(self.pkg, "__init__.py")) if "overlay" in n])
        self.assertFalse(os.path.exists(os.path.join(self.own, ".venvtx", "preview")))
        proc = self.as_nobody("gc")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotEqual(before, full_tree_hash(self.own))

    def test_a_failing_change_leaves_no_layer_that_wedges_gc(self):
        before = full_tree_hash(self.own)
        proc = self.previewed("import pkg.sub; assert pkg.sub.x == 1", "sh", "-c",
                              "echo 'x = 2' > {0}/sub/__init__.py && chmod -R a-w {0}".format(self.pkg))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual(before, full_tree_hash(self.own))
        proc = self.as_nobody("gc")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.own, ".venvtx", "preview")))


class ExternalStore(ExternalStoreMixin, VenvTestCase):
    """A store on another filesystem (a tmpfs this test mounts): every capture and every
    rollback crosses filesystems as a copy, and still brings back owner, mode, mtime, xattrs
    and holes."""

    def test_removal_and_rollback_keep_every_fact_of_a_file(self):
        package = os.path.join(self.site, "flash_attn")
        marked = os.path.join(package, "__init__.py")
        sparse = os.path.join(package, "ops", "__init__.py")  # listed in RECORD: removed with the rest
        os.chown(marked, 1234, 1234)
        os.setxattr(marked, "user.venvtx.test", b"kept")
        os.setxattr(marked, "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 10, 0, 0, 0))
        with open(sparse, "wb") as f:
            f.truncate(8 * 1024 * 1024)
            f.seek(3000000)
            f.write(b"x")
        os.utime(sparse, ns=(1_600_000_000_000_000_000, 1_600_000_000_123_456_789))
        before = full_tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.exists(package))
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        after = full_tree_hash(self.venv)
        self.assertLess(os.stat(sparse).st_blocks * 512, 1024 * 1024, "the sparse file came back dense")
        self.assertEqual(os.getxattr(marked, "user.venvtx.test"), b"kept")
        # Everything but allocated blocks, which differ a little between filesystems' allocators.
        without_blocks = {path: facts[:8] + facts[9:] if facts[0] == stat.S_IFREG else facts
                          for path, facts in before.items()}
        self.assertEqual(without_blocks, {path: facts[:8] + facts[9:] if facts[0] == stat.S_IFREG else facts
                                          for path, facts in after.items()})

    def test_a_store_whose_disk_fills_during_a_removal_is_never_wedged(self):
        big = os.path.join(self.site, "sglang", "weights.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(6 * 1024 * 1024))
        record = [os.path.join(self.site, d, "RECORD") for d in os.listdir(self.site)
                  if d.startswith("sglang-") and d.endswith(".dist-info")][0]
        with open(record, "a") as f:
            f.write("sglang/weights.bin,,\n")
        self.store = os.path.join(mount_tmpfs(self, os.path.join(self.tmp, "small-filesystem"), "6m"), "store")
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)  # the store, its reserve
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        before = full_tree_hash(self.venv)
        proc = self.venvtx("remove", "sglang")
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(before, full_tree_hash(self.venv), proc.stdout + proc.stderr)
        for args in (["recover"], ["log"], ["verify"], ["remove", "flashinfer-python"], ["rollback"]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
        self.assertEqual(before, full_tree_hash(self.venv))


class PreImageCopies(VenvTestCase):
    """A pre-image copied into the store exists whole or not at all: a copy cut short (the
    store's disk full, venvtx killed) is never put back over the file it was a copy of."""

    def big_file(self):
        big = os.path.join(self.site, "sglang", "weights.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(6 * 1024 * 1024))
        return big

    def test_a_write_whose_pre_image_fills_the_store_leaves_the_file_whole(self):
        big = self.big_file()
        self.store = os.path.join(mount_tmpfs(self, os.path.join(self.tmp, "small-filesystem"), "8m"), "store")
        self.assertEqual(self.venvtx("--store", self.store, "remove", "flash-attn").returncode, 0)
        self.assertEqual(self.venvtx("--store", self.store, "rollback").returncode, 0)
        before = full_tree_hash(self.venv)
        proc = self.venvtx("--store", self.store, "run", "--preview", "never", "--capture", "touch", "--",
                           "sh", "-c", "echo appended >> " + big)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(before, full_tree_hash(self.venv), proc.stdout + proc.stderr)
        self.assertIn("as it was before", proc.stderr)
        self.assertNotIn("NOT restored", proc.stdout + proc.stderr)
        for args in (["recover"], ["log"], ["remove", "flashinfer-python"], ["rollback"]):
            proc = self.venvtx("--store", self.store, *args)
            self.assertEqual(proc.returncode, 0, "%s: %s" % (args, proc.stdout + proc.stderr))
        self.assertEqual(before, full_tree_hash(self.venv))


class MountBelowTheVenv(VenvTestCase):
    """The overlay shows what a mount below the venv covers, not what the live venv runs: such
    a venv is never previewed (auto falls back to in place, and says why)."""

    def mount_flashinfer(self):
        if os.geteuid() != 0:
            self.skipTest("bind mounts need root")
        mounted = os.path.join(self.tmp, "mounted-flashinfer")
        os.makedirs(mounted)
        with open(os.path.join(mounted, "__init__.py"), "w") as f:
            f.write("import flash_attn\n")
        target = os.path.join(self.site, "flashinfer")
        if subprocess.run(["mount", "--bind", mounted, target]).returncode != 0:
            self.skipTest("could not bind-mount")
        self.addCleanup(subprocess.run, ["umount", "-l", target])
        return mounted

    def test_a_removal_of_what_is_mounted_is_refused(self):
        mounted = self.mount_flashinfer()
        outside = full_tree_hash(mounted)
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flashinfer-python")
        self.assertOneLineError(proc, 2)
        self.assertIn("mounted at", proc.stderr)
        self.assertEqual(before, tree_hash(self.venv))
        self.assertEqual(outside, full_tree_hash(mounted))
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)  # what is not mounted goes

    def test_a_change_that_breaks_what_is_mounted_is_not_committed(self):
        self.mount_flashinfer()
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("remove", "flash-attn", "--probe", "import flashinfer")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertFalse(tx["preview"]["used"])
        self.assertIn("mounted below the venv", tx["preview"]["reason"])
        self.assertEqual(before, tree_hash(self.venv))


class WholeSecondTimestamps(VenvTestCase):
    """A filesystem that keeps whole seconds (ext4 with 128-byte inodes; older kernels' clock
    ticks do the same in milliseconds): a directory changed just before venvtx's scan, and
    again by another path during the command, keeps its ctime. The check after the command
    reads such a directory again rather than trusting the ctime, and names the change."""

    def test_an_entry_added_by_another_path_in_the_second_of_the_scan_is_named(self):
        if os.geteuid() != 0:
            self.skipTest("loop and bind mounts need root")
        image = os.path.join(self.tmp, "seconds.img")
        with open(image, "wb") as f:
            f.truncate(128 * 1024 * 1024)
        mounted = os.path.join(self.tmp, "seconds")
        second_path = os.path.join(self.tmp, "second-path")
        os.makedirs(mounted)
        os.makedirs(second_path)
        if subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", image], capture_output=True).returncode != 0 or \
                subprocess.run(["mount", "-o", "loop", image, mounted]).returncode != 0:
            self.skipTest("no loop-mounted ext4 here")
        self.addCleanup(subprocess.run, ["umount", "-l", mounted])
        package = os.path.relpath(os.path.join(self.site, "flash_attn"), self.tmp)  # venv/lib/.../flash_attn
        subprocess.run(["cp", "-a", self.venv, mounted], check=True)
        self.venv = os.path.join(mounted, "venv")
        if subprocess.run(["mount", "--bind", mounted, second_path]).returncode != 0:
            self.skipTest("could not bind-mount")
        self.addCleanup(subprocess.run, ["umount", "-l", second_path])
        live = os.path.join(mounted, package)
        for attempt in range(3):
            time.sleep(1.01 - time.time() % 1)  # all that follows within one second, if it can
            with open(os.path.join(live, "early%d.py" % attempt), "w") as f:
                f.write("# made just before the scan\n")
            made = os.stat(live).st_ctime_ns
            late = os.path.join(package, "late%d.py" % attempt)
            proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--",
                                        "sh", "-c", "echo x > " + os.path.join(second_path, late))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            if os.stat(live).st_ctime_ns == made:
                break  # the command's entry kept the ctime of the one made before the scan
        else:
            self.skipTest("never within one second: %s" % tx)
        rel = os.path.relpath(late, "venv")
        self.assertIn({"path": rel, "change": "added"}, tx.get("changed_outside", []), tx)


class PinnedIndex(VenvTestCase):
    """Issue 41: the index is opened through the store directory venvtx opened and checked, never
    by a path the venv's owner could swap meanwhile. At that very window (VENVTX_HOOK) the store
    is swapped for a symlink to a directory venvtx must not write in."""

    def test_a_store_swapped_for_a_symlink_as_the_index_opens_is_not_followed(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        store = os.path.join(self.venv, ".venvtx")
        secret = os.path.join(self.tmp, "root-only")
        os.mkdir(secret, 0o700)
        swap = "mv {s} {s}.real && ln -s {t} {s}".format(s=store, t=secret)
        proc = self.venvtx("stamp", env=dict(self.env, VENVTX_HOOK="index_open:" + swap))
        self.assertEqual(os.listdir(secret), [], "venvtx followed the swapped path: " + proc.stdout + proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertTrue(proc.returncode == 0 or proc.stderr.count("\n") == 1, proc.stderr)
        db = sqlite3.connect(os.path.join(store + ".real", "index.sqlite"))
        try:  # the index read and written was the real store's
            self.assertGreaterEqual(db.execute("SELECT count(*) FROM transactions").fetchone()[0], 1)
        finally:
            db.close()



class PinnedPreview(VenvTestCase):
    """Issue 41, item 5: the preview's overlay is mounted from descriptors opened beneath the
    checked store, never from path strings. At the moment the layers are mounted (VENVTX_HOOK),
    the store's preview directory is swapped for a symlink to a look-alike whose upper layer leads
    to a directory venvtx must not write in: the command's files must not land there."""

    def test_a_preview_area_swapped_for_a_symlink_as_the_overlay_mounts_is_not_followed(self):
        previews = os.path.join(self.venv, ".venvtx", "preview")
        secret = os.path.join(self.tmp, "root-only")
        decoy = os.path.join(self.tmp, "decoy")
        os.mkdir(secret, 0o700)
        os.mkdir(decoy)
        swap = ("for area in {p}/*; do n=$(basename $area); mkdir -p {d}/$n/work; touch {d}/$n/lock; ln -s {s} {d}/$n/upper; done; "
                "mv {p} {p}.real && ln -s {d} {p}").format(p=previews, d=decoy, s=secret)
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--preview", "always", "--", "sh", "-c",
                           "echo planted > " + os.path.join(self.site, "planted.py"),
                           env=dict(self.env, VENVTX_HOOK="preview_mount:" + swap))
        self.assertTrue(os.path.islink(previews), "the hook never ran: " + proc.stdout + proc.stderr)
        self.assertEqual(os.listdir(secret), [], "the overlay's upper layer followed the swapped path: "
                         + proc.stdout + proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
        os.unlink(previews)
        os.rename(previews + ".real", previews)
        self.assertEqual(tree_hash(self.venv), before)


FLIPPER = r'''
import ctypes, os, sys, threading, time
decoy, victim = (p.encode() for p in sys.argv[1:3])
width = max(len(decoy), len(victim)) + 1
decoy, victim = decoy.ljust(width, b"\0"), victim.ljust(width, b"\0")
buffer = ctypes.create_string_buffer(decoy, width)
libc = ctypes.CDLL(None, use_errno=True)
done = time.monotonic() + 1.5
def flip():
    while time.monotonic() < done:
        ctypes.memmove(buffer, victim, width)
        ctypes.memmove(buffer, decoy, width)
threading.Thread(target=flip).start()
while time.monotonic() < done:
    libc.unlink(buffer)  # ctypes lets the flipping thread run meanwhile
'''


class FlippedPath(VenvTestCase):
    """A command whose second thread flips the path of an `unlink` between a file outside the
    venv and a venv file while the call is held. Previewed (the default for run, probe or not),
    the overlay is the capture. In place, the kernel makes the call (venvtx never makes one for
    the command) and reads the path again: where the flip wins, the check after the command
    names the venv file as changed outside, never "nothing changed"."""

    def flip(self, *options):
        victim = os.path.join(self.site, "flash_attn", "__init__.py")
        decoy = os.path.join(self.tmp, "decoy", "__init__.py")
        os.makedirs(os.path.dirname(decoy))
        return victim, self.venvtx_json("run", *options, "--", os.path.join(self.venv, "bin", "python"), "-c",
                                        FLIPPER, decoy, victim)

    def test_previewed_the_removed_file_is_captured_and_rolled_back(self):
        before = full_tree_hash(self.venv)
        victim, (proc, tx) = self.flip()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        if not tx["preview"]["used"]:
            self.skipTest("no private view here: " + tx["preview"]["reason"])
        self.assertFalse(os.path.exists(victim), "the flip never reached the venv file")
        self.assertEqual(tx["changed_outside"], [], tx)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(before, full_tree_hash(self.venv))

    def test_in_place_a_removal_is_captured_or_named(self):
        before = full_tree_hash(self.venv)
        victim, (proc, tx) = self.flip("--preview", "never", "--capture", "touch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(victim), "the flip never reached the venv file")
        rel = os.path.relpath(victim, self.venv)
        if tx.get("files", {}).get("removed") == 1:
            self.assertEqual(tx["changed_outside"], [], tx)  # captured: undone exactly
            self.assertEqual(self.venvtx("rollback").returncode, 0)
            self.assertEqual(before, full_tree_hash(self.venv))
        else:
            self.assertIn(rel, [change["path"] for change in tx["changed_outside"]], tx)
