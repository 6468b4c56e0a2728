"""The facts planning keeps in the index (a dist-info's METADATA, a shared object's dynamic
section) and the inode keys of stored objects: used only while the file is the very inode,
unchanged, that they were read from. Each test changes a file behind venvtx's back in a way
size and mtime do not show (same size, mtime set back; or another inode renamed over it) and
checks that the plan or the restore sees the change."""
import os
import sqlite3
import subprocess
import time
import unittest

from support import VenvTestCase, tree_hash

SITE_GLOB = "lib/python%d.%d/site-packages"
SETTLE_S = 2.1  # a file changed in the last two seconds is not cached


class FactCacheCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)  # a store, so a cache
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.site = os.path.join(self.venv, next(
            os.path.join("lib", d, "site-packages") for d in os.listdir(os.path.join(self.venv, "lib"))))
        time.sleep(SETTLE_S)

    def facts(self):
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            return {path: (kind, ino, ctime) for path, kind, ino, ctime in
                    db.execute("SELECT path, kind, ino, ctime_ns FROM file_facts")}
        finally:
            db.close()

    def rel(self, path):
        return os.path.relpath(path, self.venv)

    def consumers_of_lost(self, *names):
        proc, plan = self.venvtx_json("remove", *names, "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return {lost["soname"]: sorted(c["owner"] for c in lost["consumers"]) for lost in plan["lost_libraries"]}

    def broken_by(self, *names):
        proc, plan = self.venvtx_json("remove", *names, "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return sorted(b["dependent"].split()[0] for b in plan["broken_requirements"])

    def rewrite_in_place(self, path, data):
        """Same inode, same size, mtime set back: only ctime shows the change."""
        st = os.stat(path)
        data = data[:st.st_size].ljust(st.st_size, b"\0")
        os.chmod(path, st.st_mode | 0o200)
        with open(path, "r+b") as f:
            f.write(data)
        os.chmod(path, st.st_mode)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.assertEqual((os.stat(path).st_size, os.stat(path).st_mtime_ns), (st.st_size, st.st_mtime_ns))

    def replace_by_rename(self, path, data):
        """Another inode of the same size and mtime renamed over it."""
        st = os.stat(path)
        temporary = path + ".new"
        with open(temporary, "wb") as f:
            f.write(data[:st.st_size].ljust(st.st_size, b"\0"))
        os.chmod(temporary, st.st_mode)
        os.utime(temporary, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(temporary, path)


class SharedObjectFacts(FactCacheCase):
    def cached_first(self):
        before = self.consumers_of_lost("nvidia-nccl-cu13")
        self.assertIn("torch", before.get("libnccl.so.2", []))
        cuda = os.path.join(self.site, "torch", "lib", "libtorch_cuda.so")
        kind, ino, _ = self.facts()[self.rel(cuda)]
        self.assertEqual((kind, ino), ("elf", os.stat(cuda).st_ino))
        self.assertEqual(self.consumers_of_lost("nvidia-nccl-cu13"), before)  # from the cache
        with open(os.path.join(self.site, "nvidia", "cudnn", "lib", "libcudnn.so.9"), "rb") as f:
            donor = f.read()  # an ELF that needs no libnccl
        return cuda, donor

    def test_a_library_edited_in_place_is_read_again(self):
        cuda, donor = self.cached_first()
        self.rewrite_in_place(cuda, donor)
        self.assertNotIn("torch", self.consumers_of_lost("nvidia-nccl-cu13").get("libnccl.so.2", []))

    def test_a_library_replaced_by_another_inode_is_read_again(self):
        cuda, donor = self.cached_first()
        self.replace_by_rename(cuda, donor)
        self.assertNotIn("torch", self.consumers_of_lost("nvidia-nccl-cu13").get("libnccl.so.2", []))

    def test_a_touched_library_is_read_again_and_kept_anew(self):
        cuda, _ = self.cached_first()
        _, _, ctime = self.facts()[self.rel(cuda)]
        os.utime(cuda)
        self.assertIn("torch", self.consumers_of_lost("nvidia-nccl-cu13")["libnccl.so.2"])
        self.assertEqual(self.facts()[self.rel(cuda)][2], ctime, "kept while it had just changed")
        time.sleep(SETTLE_S)
        self.consumers_of_lost("nvidia-nccl-cu13")
        self.assertEqual(self.facts()[self.rel(cuda)][2], os.stat(cuda).st_ctime_ns)


    def test_a_library_whose_names_are_not_utf8_is_planned_every_time(self):
        source = os.path.join(self.tmp, "odd.c")
        with open(source, "w") as f:
            f.write("int odd(void) { return 1; }\n")
        odd = os.path.join(self.site, "nvidia", "nccl", "lib", "libodd.so")
        subprocess.run([b"cc", b"-shared", b"-fPIC", b"-o", odd.encode(), source.encode(), b"-Wl,-soname,lib\xff\xfe.so"],
                       check=True)
        os.utime(odd, (time.time() - 10, time.time() - 10))
        record = next(os.path.join(self.site, d, "RECORD") for d in os.listdir(self.site)
                      if d.startswith("nvidia_nccl_cu13-") and d.endswith(".dist-info"))
        with open(record, "a") as f:
            f.write("nvidia/nccl/lib/libodd.so,,\n")
        time.sleep(SETTLE_S)
        for _ in range(2):
            proc = self.venvtx("remove", "nvidia-nccl-cu13", "--dry-run")
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotIn(self.rel(odd), self.facts())

    def test_facts_of_files_that_are_gone_are_forgotten(self):
        self.consumers_of_lost("nvidia-nccl-cu13")
        nccl = os.path.join(self.site, "nvidia", "nccl", "lib", "libnccl.so.2")
        self.assertIn(self.rel(nccl), self.facts())
        self.assertEqual(self.venvtx("remove", "nvidia-nccl-cu13", "--no-probe").returncode, 0)
        self.consumers_of_lost("sglang")
        self.assertNotIn(self.rel(nccl), self.facts())


class MetadataFacts(FactCacheCase):
    def cached_first(self):
        self.assertIn("sglang", self.broken_by("torch"))
        metadata = next(os.path.join(self.site, d, "METADATA") for d in os.listdir(self.site)
                        if d.startswith("sglang-") and d.endswith(".dist-info"))
        self.assertEqual(self.facts()[self.rel(metadata)][0], "metadata")
        self.assertIn("sglang", self.broken_by("torch"))  # from the cache
        with open(metadata, "rb") as f:
            text = f.read()
        self.assertIn(b"Requires-Dist: torch\n", text)
        return metadata, text.replace(b"Requires-Dist: torch\n", b"Requires-Dist: xxxxx\n")

    def test_metadata_edited_in_place_is_read_again(self):
        metadata, edited = self.cached_first()
        self.rewrite_in_place(metadata, edited)
        self.assertNotIn("sglang", self.broken_by("torch"))

    def test_metadata_replaced_by_another_inode_is_read_again(self):
        metadata, edited = self.cached_first()
        self.replace_by_rename(metadata, edited)
        self.assertNotIn("sglang", self.broken_by("torch"))


class ObjectKeys(FactCacheCase):
    """A rollback trusts a stored object without reading it only while its inode is the one
    recorded when it was stored; `verify` always reads it."""

    def removed_with_objects(self):
        self.before = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertEqual(self.venvtx("gc").returncode, 0)  # stores what the removal left unhashed
        db = sqlite3.connect(os.path.join(self.venv, ".venvtx", "index.sqlite"))
        try:
            hex, ino = db.execute("SELECT o.sha256, o.ino FROM objects o JOIN entries e ON e.before_object = o.sha256 "
                                  "WHERE e.path LIKE '%sglang/srt/server.py'").fetchone()
        finally:
            db.close()
        path = os.path.join(self.venv, ".venvtx", "objects", hex[:2], hex[2:])
        self.assertEqual(ino, os.stat(path).st_ino)
        return path

    def test_an_object_rotted_in_place_is_never_restored(self):
        path = self.removed_with_objects()
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[0] ^= 0xFF
        self.rewrite_in_place(path, bytes(data))
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn("corrupted", proc.stderr)
        self.assertEqual(self.venvtx("verify").returncode, 6)

    def test_an_object_replaced_by_the_same_bytes_is_read_and_restored(self):
        path = self.removed_with_objects()
        with open(path, "rb") as f:
            data = f.read()
        self.replace_by_rename(path, data)
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(self.venv))

    def test_a_rollback_whose_probe_deletes_a_file_and_fails_keeps_the_store_whole(self):
        self.removed_with_objects()
        probe = "import os, sglang.srt.server as s, sys; os.unlink(s.__file__); sys.exit('the probe fails')"
        proc = self.venvtx("rollback", "--no-baseline", "--probe", probe)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        proc = self.venvtx("rollback")  # the removal's bytes are all still stored
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(self.venvtx("verify").returncode, 0)

    def test_an_untouched_rollback_puts_the_very_inodes_back(self):
        server = os.path.join(self.site, "sglang", "srt", "server.py")
        inode = os.stat(server).st_ino
        stored = self.removed_with_objects()
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))
        self.assertEqual(os.stat(server).st_ino, inode)  # renamed back, never copied
        self.assertFalse(os.path.exists(stored))
        proc, report = self.venvtx_json("verify")
        self.assertEqual(report["problems"], [], proc.stdout)
        self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(self.before, tree_hash(self.venv))


if __name__ == "__main__":
    unittest.main()
