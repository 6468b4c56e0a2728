"""Packs (issue 12): `gc` moves the objects only older transactions need into tar+zstd packs;
every unpruned transaction still rolls back byte-identically from them (the tree compared with
this suite's own hashing, the packs read with the zstd tool and tarfile, not venvtx); a damaged
or missing pack refuses a rollback before the venv is touched; verify streams the packs; kill -9
and ENOSPC/EIO at every step of packing and of a rollback from packs lose nothing."""
import json
import os
import re
import shutil
import subprocess
import unittest

import test_crash
import test_gc
from support import VENVTX, pack_members, store_growth, tree_hash

KILLED = -9


class PackCase(test_gc.GcCase):
    def store(self, *rel):
        return os.path.join(self.venv, ".venvtx", *rel)

    def pack_files(self):
        return sorted(os.listdir(self.store("packs"))) if os.path.isdir(self.store("packs")) else []

    def packed_rows(self):
        return dict(self.query("SELECT m.sha256, p.file FROM pack_members m JOIN packs p ON p.id = m.pack_id"))


class PackedHistory(PackCase):
    def test_every_transaction_rolls_back_from_packs_byte_identically(self):
        history = self.use_history()
        doc = self.gc("--loose", "0")
        self.assertEqual(doc["pruned"], [])
        needed = self.needed_objects()  # what the removals left unhashed is among them now
        self.assertEqual(self.query("SELECT COUNT(*) FROM pending_captures"), [(0,)])
        self.assertEqual(doc["packed"]["objects"], len(needed))
        # Every needed object is a pack member with its bytes, and no loose copy is left.
        members = pack_members(self.store())
        self.assertEqual({h for h in needed if members.get(h) == h}, needed)
        self.assertEqual(self.object_file_names(), set())
        self.assertObjectsExactlyNeeded()
        proc, report = self.venvtx_json("verify")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(report["packed_checked"], len(needed))
        self.assertEqual(report["objects_checked"], 0)
        undone = self.walk(history, pruned=set())
        self.assertGreaterEqual(len(undone), 5)
        self.assertVerifyClean("after the walk")

    def test_one_pack_per_transaction_and_packs_are_plain_tar_zstd(self):
        self.use_history()
        self.gc("--loose", "0")
        newest_use = dict(self.query(
            "SELECT e.before_object, MAX(e.tx_id) FROM entries e JOIN transactions t ON t.id = e.tx_id "
            "WHERE t.state != 'pruned' AND e.before_object IS NOT NULL GROUP BY e.before_object"))
        for hex, file in self.packed_rows().items():
            self.assertEqual(re.match(r"pack-tx(\d+)-", file).group(1), str(newest_use[hex]), file)
        for name in self.pack_files():
            listing = subprocess.run(["tar", "--zstd", "-tf", self.store("packs", name)], capture_output=True,
                                     text=True)
            self.assertEqual(listing.returncode, 0, listing.stderr)
            self.assertTrue(all(re.fullmatch(r"[0-9a-f]{64}", line) for line in listing.stdout.split()))

    def test_newest_transactions_stay_loose(self):
        self.use_history()
        live = self.live_ids()
        self.gc("--loose", "3")
        hot = {row[0] for row in self.query(
            "SELECT DISTINCT e.before_object FROM entries e WHERE e.tx_id > ? AND e.before_object IS NOT NULL",
            live[-4])}
        self.assertTrue(hot)
        self.assertLessEqual(hot, self.object_file_names())
        self.assertEqual(hot & set(self.packed_rows()), set())
        self.assertTrue(self.packed_rows())
        self.assertObjectsExactlyNeeded()

    def test_retention_forms_with_packs(self):
        for args in (["--keep", "7", "--loose", "2"], ["--max-size", "1M", "--loose", "0"],
                     ["--older-than", "1d", "--loose", "1"]):
            with self.subTest(args=args):
                history = self.use_history()
                if "--older-than" in args:
                    self.backdate({1: 3 * test_gc.DAY, 2: 3 * test_gc.DAY, 3: 2 * test_gc.DAY})
                doc = self.gc(*args)
                self.assertTrue(doc["pruned"], doc)
                self.assertObjectsExactlyNeeded()
                self.assertVerifyClean(str(args))
                self.walk(history, pruned=set(self.pruned_ids()))

    def test_keep_0_leaves_under_a_megabyte_beside_the_index(self):
        # The index and the reserve (store/space_reserve.hpp: room kept for recovery) aside.
        self.use_history()
        self.gc("--loose", "0")
        self.assertTrue(self.pack_files())
        self.gc("--keep", "0")
        self.assertEqual(self.pack_files(), [])
        self.assertLess(store_growth(self.venv), 1_000_000)
        self.assertVerifyClean()

    def test_log_footer_and_show_say_what_is_packed(self):
        self.use_history()
        self.gc("--loose", "0")
        proc = self.venvtx("-v", "log")
        footer = proc.stdout.strip().splitlines()[-1]
        self.assertRegex(footer, r"^store: .* in (\d+) objects?, \1 of them packed \(\S+ \S+ in \d+ packs?\)")
        newest = self.live_ids()[-1]
        proc, shown = self.venvtx_json("show", str(newest))
        self.assertGreater(shown["stored"]["objects"], 0)
        self.assertEqual((shown["stored"]["packed"], shown["stored"]["loose"], shown["stored"]["packs"]),
                         (shown["stored"]["objects"], 0, 1))
        n = shown["stored"]["objects"]
        self.assertIn("stored: %d object%s to undo it, 0 loose, %d packed in 1 pack" % (n, "" if n == 1 else "s", n),
                      self.venvtx("show", str(newest)).stdout)


class DamagedPacks(PackCase):
    def setUp(self):
        super().setUp()
        self.use_history()
        self.gc("--loose", "0")
        self.newest = [t for t in self.log() if t["state"] == "committed" and t["kind"] != "rollback"][0]["id"]
        self.pack = [f for f in self.pack_files() if f.startswith("pack-tx%d-" % self.newest)][0]

    def assertRollbackRefused(self, *patterns):
        before = tree_hash(self.venv)
        loose = self.object_file_names()
        proc = self.venvtx("rollback")
        self.assertOneLineError(proc, 6)
        self.assertRegex(proc.stderr, "|".join(patterns))
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.object_file_names(), loose, "a damaged member must not land as an object")
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6, proc.stdout)
        self.assertRegex(proc.stdout, "|".join(patterns))

    def test_a_flipped_byte_refuses_the_rollback(self):
        path = self.store("packs", self.pack)
        os.chmod(path, 0o644)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        self.assertRollbackRefused("damaged", "corrupted", "unreadable")

    def test_a_member_replaced_with_other_bytes_is_caught_by_its_hash(self):
        # A valid pack whose member has the right name and the wrong bytes: only a hash sees it.
        work = os.path.join(self.tmp, "repack")
        os.makedirs(work)
        subprocess.run(["tar", "--zstd", "-xf", self.store("packs", self.pack), "-C", work], check=True)
        victim = sorted(os.listdir(work))[0]
        os.chmod(os.path.join(work, victim), 0o644)
        with open(os.path.join(work, victim), "ab") as f:
            f.write(b"tampered")
        os.chmod(self.store("packs", self.pack), 0o644)
        os.unlink(self.store("packs", self.pack))
        subprocess.run(["tar", "--zstd", "-cf", self.store("packs", self.pack), "-C", work, *sorted(os.listdir(work))],
                       check=True)
        self.assertRollbackRefused("corrupted")

    def test_a_missing_pack_refuses_the_rollback(self):
        os.unlink(self.store("packs", self.pack))
        self.assertRollbackRefused("cannot be opened", "unreadable")

    def test_verify_sample(self):
        proc, report = self.venvtx_json("verify", "--sample", "0")
        self.assertEqual(report["packed_checked"], 0)
        proc, report = self.venvtx_json("verify", "--sample", "100")
        self.assertEqual(report["packed_checked"], len(self.packed_rows()))


class PackEdges(PackCase):
    def test_a_failed_rollback_from_packs_restores_an_object_it_also_placed(self):
        """The undo places X at p (from a pack) and captures q, whose bytes are also X: when its
        probe fails, q must come back although p took X's unpacked copy."""
        share = os.path.join(self.venv, "share")
        os.makedirs(share, exist_ok=True)
        put = 'printf %s > "$VIRTUAL_ENV/share/%s"'
        self.assertEqual(self.venvtx("run", "--", "sh", "-c", put % ("data-x", "p")).returncode, 0)
        self.assertEqual(self.venvtx("run", "--", "sh", "-c", "; ".join([put % ("data-y", "p"),
                                                                      put % ("data-x", "q")])).returncode, 0)
        self.gc("--loose", "0")
        self.assertEqual(self.object_file_names(), set())
        before = tree_hash(self.venv)
        probe = "import os, sys; sys.exit(0 if os.path.exists(os.environ['VIRTUAL_ENV'] + '/share/q') else 1)"
        proc = self.venvtx("rollback", "--probe", probe, "--gpus", "none")  # previewed: never applied
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("the live venv was never changed", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("rollback", "--probe", probe, "--gpus", "none", "--preview", "never")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("restored", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        with open(os.path.join(share, "q")) as f:
            self.assertEqual(f.read(), "data-x")
        self.assertVerifyClean()
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(os.path.join(share, "p")) as f:
            self.assertEqual(f.read(), "data-x")

    def test_a_rotted_loose_object_is_never_packed(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.gc("--keep", "20")  # stores what the removal left unhashed; packs nothing yet (1 tx)
        self.assertEqual(self.packed_rows(), {})
        victim = sorted(self.object_files())[0]
        os.chmod(victim, 0o644)
        with open(victim, "r+b") as f:
            byte = f.read(1)
            f.seek(0)
            f.write(bytes([byte[0] ^ 0xFF]))
        proc = self.venvtx("gc", "--loose", "0")
        self.assertOneLineError(proc, 6)
        self.assertIn("corrupted", proc.stderr)
        self.assertEqual(self.packed_rows(), {})
        self.assertEqual(self.pack_files(), [])
        self.assertTrue(os.path.isfile(victim), "the only copy must stay")

    def test_something_else_under_packs_does_not_stop_gc(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        os.makedirs(self.store("packs", "not-a-pack"))
        self.gc("--loose", "0")
        self.assertTrue(self.packed_rows())
        proc = self.venvtx("verify")
        self.assertEqual(proc.returncode, 6)
        self.assertIn("stray file in the store", proc.stdout)
        self.assertIn("not-a-pack", proc.stdout)


class PackSweep(test_gc.GcSweep):
    """kill -9 and ENOSPC/EIO at every step of a gc that prunes and packs (the GcSweep checks:
    nothing an unpruned transaction needs is lost, a second gc reaches the uninterrupted store,
    verify clean, the unpruned transactions roll back from packs byte-identically)."""
    ARGS = ["gc", "--keep", "4", "--loose", "1"]
    EXPECTED_PRUNED = [1, 2, 3]


class RollbackFromPacksSweep(test_crash.SweepCase):
    """kill -9 and ENOSPC/EIO during a rollback whose objects are all packed: at every step up to
    the tenth, then sampled (VENVTX_FULL_SWEEPS=1: every step)."""

    def template(self):
        template = self.prepare(["remove", "sglang", "flash*"], ["remove", "nvidia-nccl-cu13", "--no-probe"])
        proc = subprocess.run([VENVTX, "--venv", template, "gc", "--loose", "0"], capture_output=True,
                              text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse([f for _, _, fs in os.walk(os.path.join(template, ".venvtx", "objects")) for f in fs])
        return template

    def test_kill_at_every_step(self):
        self.sweep(self.template(), ["rollback"], 0, "committed")

    def test_enospc_and_eio_at_every_step(self):
        template = self.template()
        self.fresh(template)
        before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        after = tree_hash(self.venv)
        steps = test_crash.InjectedIoErrors.count_steps(self, template, ["rollback"])
        self.assertGreater(steps, 10)
        for kind in ("ENOSPC", "EIO:persist"):
            for step in (step for step in range(1, steps + 1) if test_crash.sampled(step, 3)):
                self.fresh(template)
                where = "%s at step %d of %d" % (kind, step, steps)
                proc = self.venvtx("rollback", env=dict(self.env, VENVTX_FAULT="%d:%s" % (step, kind)))
                self.assertIn(proc.returncode, (0, 1), where + ": " + proc.stdout + proc.stderr)
                if proc.returncode == 1:
                    self.assertRegex(proc.stderr.strip(), r"^venvtx: .*(No space left on device|Input/output error)[^\n]*$",
                                     where)
                self.assertEqual(self.venvtx("recover").returncode, 0, where)
                tree = tree_hash(self.venv)
                self.assertIn(tree, (before, after), where + " left a third state")
                # Whatever happened, the packs still hold every object: the rollback can be done now.
                if tree == before:
                    self.assertEqual(self.venvtx("rollback").returncode, 0, where)
                    self.assertEqual(tree_hash(self.venv), after, where)
                verify = self.venvtx("verify")
                self.assertEqual(verify.returncode, 0, where + ": " + verify.stdout[-2000:])
        print("\n  rollback from packs: injected I/O errors over %d steps x 2 kinds: all restored or recoverable" % steps)


if __name__ == "__main__":
    unittest.main()
