"""Know before you break it: the removal plan's library impact, `why`, shared ownership and
`remove --keep-going` (issue 5)."""
import base64
import hashlib
import os
import unittest

from keep_going_checks import KeepGoingChecks
from support import VenvTestCase, story_template, tree_hash

LOST = ["libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"]
CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
CLEANUP = ["nvidia-*-cu13", "sglang", "flashinfer*", "flash-attn"]


class ImpactCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        # The loader's cache as this test wants it, not as this machine has it.
        self.ld_cache = os.path.join(self.tmp, "ld.so.cache.txt")
        with open(self.ld_cache, "w") as f:
            f.write("2 libs found in cache `/etc/ld.so.cache'\n"
                    "\tlibcudnn.so.9 (libc6,x86-64) => /opt/cuda/lib/libcudnn.so.9\n"
                    "\tlibnccl.so.2 (libc6) => /opt/cuda32/lib/libnccl.so.2\n")
        self.env["VENVTX_LD_CACHE"] = self.ld_cache


class DryRunPlan(ImpactCase):
    def test_names_every_lost_soname_its_consumer_and_the_stub(self):
        before = tree_hash(self.venv)
        proc, plan = self.venvtx_json("remove", *CLEANUP, "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lost = {entry["soname"]: entry for entry in plan["lost_libraries"]}
        self.assertEqual(sorted(lost), sorted(LOST))
        for soname, entry in lost.items():
            self.assertEqual([c["owner"] for c in entry["consumers"]], ["torch"], soname)
            self.assertTrue(entry["consumers"][0]["path"].endswith("torch/lib/libtorch_cuda.so"))
            self.assertEqual(len(entry["provider_owners"]), 1)
            self.assertIn(entry["provider_owners"][0], CU13)
        # libcudnn has a cache entry outside the default dirs: a fallback, not the same file.
        self.assertEqual(lost["libcudnn.so.9"]["consumers"][0]["after"], "system")
        self.assertEqual(lost["libcudnn.so.9"]["consumers"][0]["fallback"], "/opt/cuda/lib/libcudnn.so.9")
        # libnccl's cache entry is 32-bit: the loader would find nothing.
        self.assertEqual(lost["libnccl.so.2"]["consumers"][0]["after"], "missing")
        stubs = {note["name"]: note["note"] for note in plan["no_shared_library"]}
        self.assertIn("nvidia-cudnn-cu12", stubs)
        self.assertIn("ships no shared library", stubs["nvidia-cudnn-cu12"])
        self.assertNotIn("torch", stubs)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_human_plan_says_missing_or_fallback(self):
        proc = self.venvtx("remove", *CLEANUP, "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for soname in LOST:
            self.assertIn(soname, proc.stdout)
        self.assertIn("falls back to /opt/cuda/lib/libcudnn.so.9: not the same file", proc.stdout)
        self.assertIn("would be missing", proc.stdout)
        self.assertIn("nvidia-cudnn-cu12", proc.stdout)

    def test_a_consumer_whose_record_cannot_be_read_is_named_not_analysed(self):
        """Without torch's RECORD, nothing is known to need the cu13 libraries: the plan must say
        it could not look, not just list no lost library."""
        torch_info = [d for d in os.listdir(self.site) if d.startswith("torch-") and d.endswith(".dist-info")][0]
        os.unlink(os.path.join(self.site, torch_info, "RECORD"))
        proc, plan = self.venvtx_json("remove", "nvidia-*-cu13", "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(plan["lost_libraries"], [])
        self.assertEqual([d["name"] for d in plan["unanalysed"]], ["torch"])
        self.assertIn("torch has no RECORD", plan["unanalysed"][0]["reason"])
        proc = self.venvtx("remove", "nvidia-*-cu13", "--dry-run")
        self.assertIn("libraries not analysed: torch has no RECORD", proc.stdout)

    def test_harmless_removal_loses_nothing(self):
        proc, plan = self.venvtx_json("remove", "sglang", "flash*", "--dry-run")
        self.assertEqual(plan["lost_libraries"], [])
        self.assertEqual(plan["unanalysed"], [])


class KeepGoing(KeepGoingChecks, ImpactCase):
    """`remove --keep-going` on the story venv (issue 11, part 2): the whole set first, in a
    private view; then each distribution alone; then the survivors together."""
    CODE = "import torch"
    REMOVED = ["flash-attn", "flashinfer-python", "sglang"]
    NAMES = sorted(REMOVED + CU13)

    def test_removes_the_largest_passing_subset(self):
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("remove", *CLEANUP, "--keep-going", "--probe", self.CODE)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tx["state"], "committed")
        self.assertEqual(sorted(p["name"] for p in tx["packages"]), self.REMOVED)
        # Each kept reason is the probe's own result with that distribution removed (run again
        # here by hand, on a copy of the venv as it was); the probe count is one baseline plus
        # one per trial.
        self.assertKeepGoing(tx, self.CODE, os.path.join(story_template(), "venv"), self.NAMES, self.REMOVED, CU13)
        keep_going = tx["keep_going"]
        self.assertTrue(keep_going["exact"])
        self.assertEqual([r["system_copies"] for r in keep_going["removed"]], [[], [], []])
        for name, entry in self.keep_going_sets(tx)[1].items():
            self.assertEqual(entry["removed_with"], [], name)  # each fails alone
            self.assertTrue(entry["probe_error"].startswith("ImportError: "), entry)
        trials = keep_going["trials"]
        sets = [t["removed"] for t in trials]
        self.assertEqual((sets[0], sorted(sets[1:8]), sets[8:]), (self.NAMES, [[n] for n in self.NAMES], [self.REMOVED]))
        self.assertEqual(keep_going["probes"], 10)  # baseline, whole, 7 singles, the 3 survivors
        self.assertNotEqual(self.python("import sglang").returncode, 0)
        after = tree_hash(self.venv)
        self.assertTrue(any("nvidia/cudnn/lib/libcudnn.so.9" in p for p in after))
        self.assertFalse(any("sglang" in p for p in after))
        # One transaction: the whole set's attempt, previewed (the live venv never had it), is
        # its first trial, not an entry of its own.
        proc, log = self.venvtx_json("log")
        self.assertEqual([t["state"] for t in log], ["committed"])
        self.assertEqual(sorted(keep_going["trials"][0]["removed"]), sorted(self.NAMES))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_human_output_one_line_per_distribution(self):
        proc = self.venvtx("remove", *CLEANUP, "--keep-going", "--probe", self.CODE)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("\nkeep-going: 10 probes run in private views, up to 4 at a time\n", proc.stdout)
        lines = self.assertKeepGoingLines(proc.stdout, self.REMOVED, CU13)
        for name in self.REMOVED:
            self.assertEqual(lines[name], "  removed " + name)
        for name in CU13:
            self.assertTrue(lines[name].startswith("  kept %s: with it removed, the probe failed: ImportError: " % name),
                            lines[name])
        self.assertEqual(self.python(self.CODE).returncode, 0)


class SharedOwnership(ImpactCase):
    def add_twin_owning(self, rel):
        """A second distribution (nvidia-nvshmem-cu12) whose RECORD lists the same library file."""
        info = os.path.join(self.site, "nvidia_nvshmem_cu12-3.3.20.dist-info")
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: nvidia-nvshmem-cu12\nVersion: 3.3.20\n")
        with open(os.path.join(self.site, rel), "rb") as f:
            data = f.read()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("%s,sha256=%s,%d\n" % (rel, digest, len(data)))
            f.write("nvidia_nvshmem_cu12-3.3.20.dist-info/METADATA,,\n")
            f.write("nvidia_nvshmem_cu12-3.3.20.dist-info/RECORD,,\n")

    def test_removing_one_owner_keeps_the_file(self):
        rel = "nvidia/nvshmem/lib/libnvshmem_host.so.3"
        self.add_twin_owning(rel)
        proc = self.venvtx("remove", "nvidia-nvshmem-cu13", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("keeping", proc.stdout)
        self.assertIn("nvidia-nvshmem-cu12 also owns it", proc.stdout)
        self.assertTrue(os.path.isfile(os.path.join(self.site, rel)))
        self.assertFalse(os.path.exists(os.path.join(self.site, "nvidia_nvshmem_cu13-3.4.5.dist-info")))
        self.assertEqual(self.python("import torch").returncode, 0)


class ProbeFootprint(ImpactCase):
    def test_library_preloaded_with_ctypes_is_flagged(self):
        """torch preloads nvidia libraries with ctypes, which no ELF header shows: a passing
        probe records what it mapped, and a later plan warns when a removal takes one."""
        import subprocess
        lib_dir = os.path.join(self.site, "nvidia", "cufile", "lib")
        os.makedirs(lib_dir)
        source = os.path.join(self.tmp, "cufile.c")
        with open(source, "w") as f:
            f.write("int venvtx_fake_cufile(void) { return 1; }\n")
        lib = os.path.join(lib_dir, "libcufile.so.0")
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcufile.so.0", "-o", lib, source], check=True)
        info = os.path.join(self.site, "nvidia_cufile_cu13-1.15.0.dist-info")
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: nvidia-cufile-cu13\nVersion: 1.15.0\n")
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("nvidia/cufile/lib/libcufile.so.0,,\nnvidia_cufile_cu13-1.15.0.dist-info/METADATA,,\n"
                    "nvidia_cufile_cu13-1.15.0.dist-info/RECORD,,\n")
        preload = "import ctypes, torch, os; ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), '..', 'nvidia', 'cufile', 'lib', 'libcufile.so.0'))"
        proc = self.venvtx("remove", "flash-attn", "--probe", preload)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc, plan = self.venvtx_json("remove", "nvidia-cufile-cu13", "--dry-run")
        self.assertEqual(plan["lost_libraries"], [])  # no ELF header needs it
        self.assertEqual(len(plan["probe_footprint"]), 1, plan)
        self.assertIn("nvidia/cufile/lib/libcufile.so.0", plan["probe_footprint"][0])
        human = self.venvtx("remove", "nvidia-cufile-cu13", "--dry-run").stdout
        self.assertIn("loaded by an earlier passing probe", human)


class Why(ImpactCase):
    def test_why_soname(self):
        proc, answer = self.venvtx_json("why", "libnccl.so.2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(answer["kind"], "soname")
        self.assertEqual([p["owner"] for p in answer["providers"]], ["nvidia-nccl-cu13"])
        self.assertEqual([c["owner"] for c in answer["consumers"]], ["torch"])
        consumer = answer["consumers"][0]
        self.assertEqual(consumer["resolves_to"]["kind"], "venv")
        self.assertTrue(consumer["resolves_to"]["path"].endswith("nvidia/nccl/lib/libnccl.so.2"))
        self.assertEqual(consumer["without"]["kind"], "missing")
        human = self.venvtx("why", "libnccl.so.2").stdout
        self.assertIn("provided by", human)
        self.assertIn("(nvidia-nccl-cu13)", human)
        self.assertIn("needed by", human)

    def test_why_distribution(self):
        proc, answer = self.venvtx_json("why", "torch")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(answer["kind"], "distribution")
        self.assertEqual(answer["version"], "2.11.0")
        sonames = sorted(p["soname"] for p in answer["provides"])
        self.assertIn("libtorch_cuda.so", sonames)
        self.assertIn("sglang", answer["required_by"])
        proc, cudnn = self.venvtx_json("why", "nvidia-cudnn-cu13")
        self.assertIn("torch", cudnn["required_by"])
        self.assertEqual([l["soname"] for l in cudnn["lost_libraries"]], ["libcudnn.so.9"])
        stub = self.venvtx_json("why", "nvidia-cudnn-cu12")[1]
        self.assertEqual(stub["provides"], [])

    def test_why_file_and_unknown_name(self):
        rel = "nvidia/cusparselt/lib/libcusparseLt.so.0"
        proc, answer = self.venvtx_json("why", rel)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(answer["kind"], "file")
        self.assertEqual(answer["owners"], ["nvidia-cusparselt-cu13"])
        self.assertEqual(answer["soname"], "libcusparseLt.so.0")
        self.assertEqual([c["owner"] for c in answer["consumers"]], ["torch"])
        proc = self.venvtx("why", "no-such-thing")
        self.assertOneLineError(proc, 2)


if __name__ == "__main__":
    unittest.main()
