"""A removal's files wait unhashed in the store's staging area (pending captures, migration
0009): nothing is read, a rollback renames the very inodes back, and `gc` hashes what stays into
objects. Each test changes a staged file behind venvtx's back, or copies the store, or undoes with
a probe, and checks that a changed capture is never put back and an intact one always is."""
import os
import sqlite3
import subprocess
import unittest

from support import VENVTX, VenvTestCase, tree_hash

SERVER = os.path.join("sglang", "srt", "server.py")  # listed in RECORD with its hash


class PendingCase(VenvTestCase):
    def query(self, sql, *params, venv=None):
        db = sqlite3.connect(os.path.join(venv or self.venv, ".venvtx", "index.sqlite"))
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def pending_count(self):
        return self.query("SELECT COUNT(*) FROM pending_captures")[0][0]

    def staged(self, rel_in_site):
        """The staged file of the removed file at site-packages/rel_in_site."""
        (tx, entry), = self.query("SELECT e.tx_id, e.id FROM entries e JOIN pending_captures p ON p.entry_id = e.id "
                                  "WHERE e.path LIKE ?", "%" + rel_in_site)
        return os.path.join(self.venv, ".venvtx", "staging", str(tx), str(entry))

    def staged_files(self):
        staging = os.path.join(self.venv, ".venvtx", "staging")
        return sorted(os.path.join(d, f) for d, _, files in os.walk(staging) for f in files)

    def remove_sglang(self):
        self.before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.removed = tree_hash(self.venv)

    def rewrite(self, path, data, new_inode):
        """Same size and mtime: in place (only ctime shows it), or another inode renamed over it."""
        st = os.stat(path)
        data = data[:st.st_size].ljust(st.st_size, b"\0")
        target = path + ".new" if new_inode else path
        os.chmod(path, st.st_mode | 0o200)
        with open(target, "wb" if new_inode else "r+b") as f:
            f.write(data)
        os.chmod(target, st.st_mode)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        if new_inode:
            os.rename(target, path)
        self.assertEqual((os.stat(path).st_size, os.stat(path).st_mtime_ns), (st.st_size, st.st_mtime_ns))

    def assertRefusedUnchanged(self, proc, why="does not match the hash recorded at its removal"):
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn(why, proc.stderr)
        self.assertTreeEqual(self.removed, tree_hash(self.venv))


class RenamedBack(PendingCase):
    def test_a_removal_reads_nothing_and_a_rollback_puts_the_very_inodes_back(self):
        server = os.path.join(self.site, SERVER)
        inode = os.stat(server).st_ino
        self.remove_sglang()
        self.assertEqual(self.object_files(), [])
        self.assertEqual(self.query("SELECT COUNT(*) FROM objects"), [(0,)])
        files = self.query("SELECT COUNT(*) FROM entries WHERE before_type = 'file'")[0][0]
        self.assertEqual(self.pending_count(), files)
        self.assertEqual(os.stat(self.staged(SERVER)).st_ino, inode)
        self.assertIn("not hashed yet", self.venvtx("show", "1").stdout)
        proc, report = self.venvtx_json("verify")
        self.assertEqual((proc.returncode, report["pending_checked"]), (0, files), proc.stdout)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(os.stat(server).st_ino, inode)
        self.assertEqual((self.staged_files(), self.pending_count()), ([], 0))
        # A redo captures and hashes again; the removal's before-states get those hashes.
        self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
        self.assertTreeEqual(self.removed, tree_hash(self.venv))
        self.assertEqual(self.query("SELECT COUNT(*) FROM entries WHERE tx_id = 1 AND before_type = 'file' "
                                    "AND before_object IS NULL"), [(0,)])
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("verify").returncode, 0)

    def test_a_copied_venv_and_store_roll_back_in_the_copy(self):
        self.remove_sglang()
        copy = os.path.join(self.tmp, "copy")
        subprocess.run(["cp", "-a", self.venv, copy], check=True)  # new inodes, same bytes and mtimes
        proc = subprocess.run([VENVTX, "--venv", copy, "rollback"],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(copy))
        self.assertTreeEqual(self.removed, tree_hash(self.venv))  # the original is untouched

    def test_a_rollback_with_a_probe_stores_first_and_a_failing_one_loses_nothing(self):
        self.remove_sglang()
        probe = "import os, sglang.srt.server as s, sys; os.unlink(s.__file__); sys.exit('the probe fails')"
        proc = self.venvtx("rollback", "--no-baseline", "--probe", probe)  # previewed: its copies go
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.removed, tree_hash(self.venv))
        self.assertEqual(self.pending_count(), 16)  # never touched
        proc = self.venvtx("rollback", "--no-baseline", "--probe", probe, "--preview", "never")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.removed, tree_hash(self.venv))
        self.assertEqual(self.pending_count(), 0)  # hashed into objects before the probe could touch them
        self.assertTrue(self.object_files())
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("verify").returncode, 0)


class ChangedInTheStore(PendingCase):
    def test_a_staged_file_rewritten_in_place_is_never_put_back(self):
        self.remove_sglang()
        path = self.staged(SERVER)
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[0] ^= 0xFF
        self.rewrite(path, bytes(data), new_inode=False)
        self.assertRefusedUnchanged(self.venvtx("rollback"))
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6)
        self.assertIn("changed capture", proc.stdout)
        proc = self.venvtx("gc")  # never stored under the hash of bytes that are not the captured ones
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("changed in the store", proc.stdout + proc.stderr)
        self.assertEqual(self.pending_count(), 1)
        self.assertRefusedUnchanged(self.venvtx("rollback"))

    def test_another_inode_is_taken_only_with_the_bytes_its_record_lists(self):
        self.remove_sglang()
        path = self.staged(SERVER)
        with open(path, "rb") as f:
            original = f.read()
        self.rewrite(path, bytes(b ^ 0x20 for b in original), new_inode=True)
        self.assertRefusedUnchanged(self.venvtx("rollback"))
        self.rewrite(path, original, new_inode=True)
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(self.venv))

    def test_a_missing_staged_file_is_named(self):
        self.remove_sglang()
        os.unlink(self.staged(SERVER))
        self.assertRefusedUnchanged(self.venvtx("rollback"), why="is gone")
        self.assertRefusedUnchanged(self.venvtx("rollback", "--force"), why="is gone")
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6)
        self.assertIn("missing capture", proc.stdout)


class EditedBeforeRemoval(PendingCase):
    def edit_remove_and_chmod(self):
        server = os.path.join(self.site, SERVER)
        with open(server, "r+b") as f:
            first = f.read(1)
            f.seek(0)
            f.write(bytes([first[0] ^ 0x20]))  # one byte, same size
        self.remove_sglang()
        for d, _, files in os.walk(self.venv):
            for name in files:
                os.chmod(os.path.join(d, name), os.stat(os.path.join(d, name)).st_mode | 0o040)
        self.removed = tree_hash(self.venv)

    def test_a_file_edited_at_its_size_then_chmod_r_is_put_back_with_force(self):
        """RECORD's hash was not the edited file's, and a chmod -R moved every staged key: the
        bytes cannot be told from a change in the store, so the rollback refuses, names --force,
        and --force puts back exactly what was removed."""
        self.edit_remove_and_chmod()
        proc = self.venvtx("rollback")
        self.assertRefusedUnchanged(proc)
        self.assertIn("`--force` puts back 1 such file as they are now", proc.stderr)
        proc = self.venvtx("rollback", "--force")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("--force: taking 1 captured file as they are now", proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(self.pending_count(), 0)
        proc = self.venvtx("verify")  # the edit is the user's, as before the removal
        self.assertIn(", 1 problem", proc.stdout)
        self.assertEqual([line.split(" (")[0] for line in proc.stdout.splitlines() if line.startswith("modified")],
                         ["modified file: lib/%s/site-packages/%s" % (os.path.basename(os.path.dirname(self.site)), SERVER)])


    def test_with_a_probe_the_rollback_stores_first_and_force_works_there_too(self):
        self.edit_remove_and_chmod()
        proc = self.venvtx("rollback", "--probe", "pass")  # previewed, then refused before it applies
        self.assertRefusedUnchanged(proc, why="does not match the hash recorded at its removal")
        proc = self.venvtx("rollback", "--probe", "pass", "--preview", "never")
        self.assertRefusedUnchanged(proc, why="does not match the hash recorded at tx 1's removal")
        self.assertIn("`--force` puts back such files as they are now", proc.stderr)
        proc = self.venvtx("rollback", "--force", "--probe", "pass")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("--force: taking 1 captured file as they are now", proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(self.venv))


class KilledRollback(PendingCase):
    def test_a_file_written_after_a_killed_rollback_is_never_taken_as_the_capture(self):
        self.remove_sglang()
        server = os.path.join(self.site, SERVER)
        for point in range(1, 400):  # the first step at which the rollback has renamed it in
            proc = self.venvtx("rollback", env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, -9, proc.stdout + proc.stderr)
            if os.path.exists(server):
                break
            self.assertEqual(self.venvtx("recover").returncode, 0)
        self.assertTrue(os.path.exists(server))
        with open(server, "ab") as f:  # written before `recover` runs: no longer the captured bytes
            f.write(b"# written meanwhile\n")
        proc = self.venvtx("recover")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.exists(server))  # back in staging: it may be the only copy
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn("does not match the hash recorded at its removal", proc.stderr)


class KilledSettle(PendingCase):
    def test_verify_says_recover_moves_in_what_a_killed_gc_indexed_but_left_in_staging(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        for point in range(1, 100):  # the first step after the settle's index commit
            proc = self.venvtx("gc", "--keep", "1", env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, -9, proc.stdout + proc.stderr)
            verify = self.venvtx("verify")
            if "missing object" in verify.stdout:
                break
            self.assertEqual(self.venvtx("recover").returncode, 0)
        missing = [line for line in verify.stdout.splitlines() if line.startswith("missing object")]
        self.assertTrue(missing, verify.stdout)
        self.assertEqual(verify.returncode, 6)
        for line in missing:
            self.assertIn("still in staging, from a gc or rollback cut short: `venvtx recover` moves it in", line)
        self.assertEqual(self.venvtx("recover").returncode, 0)
        verify = self.venvtx("verify")
        self.assertEqual(verify.returncode, 0, verify.stdout)


class KilledCapture(PendingCase):
    def test_a_lookalike_put_where_a_killed_capture_took_a_file_is_not_said_restored(self):
        """A capture renames first and saves its progress after: a file still `planned` may be in
        staging. A same-size, same-mtime file put at its path is not the one journaled, and the
        staged original must outlive `recover`."""
        for point in range(1, 200):
            proc = self.venvtx("remove", "sglang", env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, -9, proc.stdout + proc.stderr)
            rows = self.query("SELECT tx_id, id, path, before_mode, before_mtime_ns FROM entries WHERE tx_id = "
                              "(SELECT MAX(id) FROM transactions) AND progress = 'planned' AND before_type = 'file'"
                              ) if os.path.exists(os.path.join(self.venv, ".venvtx", "index.sqlite")) else []
            moved = [r for r in rows if os.path.exists(os.path.join(self.venv, ".venvtx", "staging", str(r[0]),
                                                                    str(r[1])))]
            if moved:
                break
            self.assertEqual(self.venvtx("recover").returncode, 0)
        self.assertTrue(moved, "no step leaves a planned file in staging")
        tx, entry, rel, mode, mtime_ns = moved[0]
        staged = os.path.join(self.venv, ".venvtx", "staging", str(tx), str(entry))
        with open(staged, "rb") as f:
            original = f.read()
        lookalike = os.path.join(self.venv, rel)
        with open(lookalike, "wb") as f:
            f.write(bytes(b ^ 0x01 for b in original))
        os.chmod(lookalike, mode & 0o7777)
        os.utime(lookalike, ns=(mtime_ns, mtime_ns))
        proc = self.venvtx("recover")
        self.assertIn("NOT restored", proc.stdout + proc.stderr)
        with open(staged, "rb") as f:
            self.assertEqual(f.read(), original)


class Collected(PendingCase):
    def test_gc_stores_what_stays_and_prunes_the_rest_with_its_transaction(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.remove_flash_attn()
        self.assertTrue(os.path.isdir(os.path.join(self.venv, ".venvtx", "staging", "1")))
        proc, doc = self.venvtx_json("gc", "--keep", "1")
        self.assertEqual((proc.returncode, doc["pruned"]), (0, [1]), proc.stderr)
        self.assertEqual((self.staged_files(), self.pending_count()), ([], 0))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx", "staging", "1")))
        needed = {hex for (hex,) in self.query("SELECT before_object FROM entries WHERE tx_id = 2 AND "
                                                "before_type = 'file'")}
        self.assertNotIn(None, needed)
        self.assertEqual({os.path.basename(os.path.dirname(p)) + os.path.basename(p) for p in self.object_files()},
                         needed)
        self.assertEqual(self.venvtx("verify").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))

    def remove_flash_attn(self):
        self.before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)


if __name__ == "__main__":
    unittest.main()
