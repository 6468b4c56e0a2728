"""verify: re-hash store objects and venv files against RECORD; a damaged store object is never
restored silently (contract invariant 4; exit code 6)."""
import csv
import glob
import json
import os
import sqlite3
import stat
import unittest

from support import VenvTestCase, flat, tree_hash


def hashed_rows(site):
    """How many files the RECORDs in `site` list with a hash: what verify checks, read with csv."""
    count = 0
    for record in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
        with open(record, newline="") as f:
            count += sum(1 for row in csv.reader(f) if len(row) > 1 and row[1])
    return count


def object_hex(path):
    """The SHA-256 an object is named by: objects/ab/cdef... -> abcdef..."""
    return os.path.basename(os.path.dirname(path)) + os.path.basename(path)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def flip_first_byte(path):
    """Flips one byte in place, whatever mode the store gave the object; returns the old bytes."""
    os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IWUSR)
    with open(path, "rb") as f:
        original = f.read()
    damaged = bytearray(original) or bytearray(b"\0")  # the empty file's object gets one byte
    damaged[0] ^= 0xFF if original else 0
    with open(path, "r+b") as f:
        f.write(damaged)
    return original


class VerifyCase(VenvTestCase):
    def verify_json(self, *args):
        proc = self.venvtx("--json", "verify", *args)
        self.assertIn(proc.returncode, (0, 6), "stdout=%r stderr=%r" % (proc.stdout, proc.stderr))
        report = flat(json.loads(proc.stdout))
        for key in ("objects_checked", "files_checked", "problems"):
            self.assertIn(key, report)
        for problem in report["problems"]:
            self.assertEqual(sorted(problem), ["detail", "owner", "path", "what"])
        return proc, report

    def relative(self, path):
        return os.path.relpath(path, self.venv)

    def remove_sglang(self):
        proc = self.venvtx("remove", "sglang")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.venvtx("gc").returncode, 0)  # stores what the removal left unhashed
        objects = self.object_files()
        self.assertGreater(len(objects), 0, "remove stored no objects")
        return objects

    def assertRollbackRefused(self, naming):
        """rollback stops with one clear line naming the object, before touching the venv."""
        before = tree_hash(self.venv)
        proc = self.venvtx("rollback")
        self.assertNotEqual(proc.returncode, 0, "rollback restored from a damaged store: " + proc.stdout)
        message = proc.stderr.strip()
        self.assertTrue(message.startswith("venvtx: "), proc.stderr)
        self.assertNotIn("\n", message, proc.stderr)
        self.assertIn(naming, message)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        committed = [(t["id"], t["kind"]) for t in log if t["state"] == "committed"]
        self.assertEqual(committed, [(1, "remove")], "a refused rollback left a committed transaction")
        self.assertIsNone(log[-1]["undone_by"])
        return proc


class CleanVenv(VerifyCase):
    def test_clean_venv_without_history(self):
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("0 problem", proc.stdout)
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(report["problems"], [])
        self.assertEqual(report["objects_checked"], 0)
        self.assertEqual(report["files_checked"], hashed_rows(self.site))

    def test_clean_after_remove_checks_every_object(self):
        _, full = self.verify_json()
        objects = self.remove_sglang()
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(report["problems"], [])
        self.assertEqual(report["objects_checked"], len(objects))
        # sglang's RECORD lines left with it; every other file is still checked.
        self.assertLess(report["files_checked"], full["files_checked"])
        self.assertEqual(report["files_checked"], hashed_rows(self.site))

    def test_verify_changes_nothing(self):
        self.remove_sglang()
        before = tree_hash(self.venv)
        objects = {p: read_bytes(p) for p in self.object_files()}
        self.assertEqual(self.venvtx("verify").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(objects, {p: read_bytes(p) for p in self.object_files()})


class DamagedStore(VerifyCase):
    def test_corrupted_object_is_named_and_blocks_rollback(self):
        pristine = tree_hash(self.venv)
        objects = self.remove_sglang()
        # The first and the last object by name: a restore must check before it moves anything,
        # wherever the bad object falls in its order.
        for victim in (objects[0], objects[-1]):
            with self.subTest(object=self.relative(victim)):
                original = flip_first_byte(victim)
                proc = self.venvtx("verify")
                self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
                self.assertIn(victim, proc.stdout)
                self.assertIn("corrupted", proc.stdout)
                proc, report = self.verify_json()
                self.assertEqual(proc.returncode, 6)
                self.assertEqual([(p["what"], p["path"]) for p in report["problems"]],
                                 [("corrupted object", victim)])
                self.assertIn(object_hex(victim), report["problems"][0]["detail"])
                self.assertTrue(report["problems"][0]["owner"])

                self.assertRollbackRefused(object_hex(victim))
                # Still damaged: nothing repaired or dropped it behind verify's back.
                self.assertEqual(self.venvtx("verify").returncode, 6)
                with open(victim, "wb") as f:
                    f.write(original)
        # With the bytes put back, the same rollback goes through and restores exactly.
        self.assertEqual(self.venvtx("verify").returncode, 0)
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(pristine, tree_hash(self.venv))

    def test_missing_object_is_named_and_blocks_rollback(self):
        objects = self.remove_sglang()
        victim = objects[len(objects) // 2]
        os.unlink(victim)
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn("missing object", proc.stdout)
        self.assertIn(victim, proc.stdout)
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 6)
        self.assertEqual([(p["what"], p["path"]) for p in report["problems"]], [("missing object", victim)])
        self.assertEqual(report["objects_checked"], len(objects))

        self.assertRollbackRefused(object_hex(victim))
        self.assertFalse(os.path.exists(victim))


class DamagedVenv(VerifyCase):
    def test_file_edited_in_place_names_path_and_owner(self):
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        with open(target, "a") as f:
            f.write("\n# edited by hand\n")
        rel = self.relative(target)
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn(rel, proc.stdout)
        self.assertIn("flashinfer-python", proc.stdout)
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 6)
        self.assertEqual([(p["what"], p["path"], p["owner"]) for p in report["problems"]],
                         [("modified file", rel, "flashinfer-python")])
        self.assertTrue(report["problems"][0]["detail"])

    def test_deleted_file_names_path_and_owner(self):
        target = os.path.join(self.site, "flash_attn", "__init__.py")
        self.assertTrue(os.path.isfile(target))
        os.unlink(target)
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 6)
        self.assertEqual([(p["what"], p["path"], p["owner"]) for p in report["problems"]],
                         [("missing file", self.relative(target), "flash-attn")])

    def test_problems_in_store_and_venv_are_all_named(self):
        objects = self.remove_sglang()
        flip_first_byte(objects[0])
        os.unlink(objects[-1])
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        with open(target, "a") as f:
            f.write("# x\n")
        proc, report = self.verify_json()
        self.assertEqual(proc.returncode, 6)
        found = sorted((p["what"], p["path"]) for p in report["problems"])
        self.assertEqual(found, sorted([("corrupted object", objects[0]), ("missing object", objects[-1]),
                                        ("modified file", self.relative(target))]))


class Interrupted(VerifyCase):
    def test_an_interrupted_transaction_is_named_until_recover(self):
        before = tree_hash(self.venv)
        index = os.path.join(self.venv, ".venvtx", "index.sqlite")
        for point in range(1, 50):  # the first step after the journal is written
            proc = self.venvtx("remove", "flash-attn", env=dict(self.env, VENVTX_FAILPOINT=str(point)))
            self.assertEqual(proc.returncode, -9, proc.stdout + proc.stderr)
            if os.path.exists(index) and sqlite3.connect(index).execute("SELECT COUNT(*) FROM transactions").fetchone()[0]:
                break
        proc, report = self.venvtx_json("verify")
        self.assertEqual(report["unfinished"], [1])
        proc = self.venvtx("verify")
        self.assertIn("unfinished: tx 1 (interrupted: `venvtx recover` puts the venv back)", proc.stdout)
        proc = self.venvtx("recover")
        self.assertIn("the venv is back to its state before it", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc, report = self.venvtx_json("verify")
        self.assertEqual((proc.returncode, report["unfinished"]), (0, []))


class Sample(VerifyCase):
    def test_sample_zero_skips_objects_but_checks_files(self):
        objects = self.remove_sglang()
        _, full = self.verify_json()
        flip_first_byte(objects[0])
        target = os.path.join(self.site, "flashinfer", "__init__.py")
        with open(target, "a") as f:
            f.write("# x\n")
        proc, report = self.verify_json("--sample", "0")
        self.assertEqual(proc.returncode, 6, proc.stdout)
        self.assertEqual(report["objects_checked"], 0)
        self.assertEqual(report["files_checked"], full["files_checked"])
        self.assertEqual([(p["what"], p["path"]) for p in report["problems"]],
                         [("modified file", self.relative(target))])

        proc, report = self.verify_json("--sample", "100")
        self.assertEqual(report["objects_checked"], len(objects))
        self.assertIn(("corrupted object", objects[0]), [(p["what"], p["path"]) for p in report["problems"]])

    def test_sample_zero_on_a_clean_venv_passes(self):
        self.remove_sglang()
        proc, report = self.verify_json("--sample", "0")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual((report["objects_checked"], report["problems"]), (0, []))
        self.assertEqual(report["files_checked"], hashed_rows(self.site))

    def test_sample_out_of_range_is_a_usage_error(self):
        for value in ("101", "-1", "lots"):
            with self.subTest(sample=value):
                proc = self.venvtx("verify", "--sample", value)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
