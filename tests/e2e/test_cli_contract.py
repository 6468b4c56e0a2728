"""The CLI as people type it: a failing baseline does not block a repair, a saved probe guards
every change, dry runs say before → after, arguments land where they were meant, and the
history keeps only real changes. Real pip, real ELF loading, trees hashed here."""
import json
import os
import re
import unittest

from support import VenvTestCase, tree_hash

BROKEN_TORCH = "torch==2.12.0"  # needs libcufile, which no wheel here ships: `import torch` fails


class CliCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()

    def ok(self, *args):
        proc = self.venvtx(*args)
        self.assertEqual(proc.returncode, 0, "%s: %s%s" % (args, proc.stdout, proc.stderr))
        return proc

    def log_ids(self):
        proc, log = self.venvtx_json("log")
        return [tx["id"] for tx in log]

    def break_torch(self):
        self.ok("install", "--installer", "pip", "--no-probe", BROKEN_TORCH, *self.wheel_args)
        self.assertNotEqual(self.python("import torch").returncode, 0)


class Repair(CliCase):
    def test_a_rollback_with_the_probe_repairs_a_venv_that_fails_it(self):
        before = tree_hash(self.venv)
        self.break_torch()
        proc = self.venvtx("rollback", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("baseline probe FAILED", proc.stdout)
        self.assertIn("the change fixed the probe", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc, shown = self.venvtx_json("show")
        self.assertEqual((shown["kind"], shown["state"], shown["repair"]), ("rollback", "committed", "fixed"))

    def test_a_change_that_leaves_it_failing_is_restored_with_exit_4(self):
        self.break_torch()
        for preview in ("auto", "never"):
            broken = tree_hash(self.venv)
            proc, tx = self.venvtx_json("remove", "flash-attn", "--probe", "import torch", "--preview", preview)
            self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
            self.assertEqual(tx["repair"], "still_failing", preview)
            self.assertEqual(tx["state"], "aborted" if preview == "auto" else "rolled_back")
            self.assertTreeEqual(broken, tree_hash(self.venv))
            proc = self.venvtx("remove", "flash-attn", "--probe", "import torch", "--preview", preview)
            self.assertIn("failed the probe before the change too", proc.stdout)

    def test_installing_what_the_probe_imports_passes(self):
        self.ok("remove", "flash-attn")
        proc = self.venvtx("install", "--installer", "pip", "--probe", "import flash_attn", "flash-attn",
                           *self.wheel_args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("the change fixed the probe", proc.stdout)
        self.assertEqual(self.python("import flash_attn").returncode, 0)

    def test_keep_going_still_needs_a_venv_that_passes(self):
        self.break_torch()
        broken = tree_hash(self.venv)
        proc = self.venvtx("remove", "nvidia-*-cu13", "--keep-going", "--probe", "import torch")
        self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
        self.assertIn("make it pass first", proc.stdout)
        self.assertTreeEqual(broken, tree_hash(self.venv))


class SavedProbe(CliCase):
    def test_the_saved_probe_guards_every_change_until_no_probe(self):
        self.ok("config", "probe", "import torch")
        before = tree_hash(self.venv)
        proc = self.venvtx("install", "--installer", "pip", BROKEN_TORCH, *self.wheel_args)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc, tx = self.venvtx_json("remove", "flash-attn")
        self.assertEqual(tx["probe"]["code"], ["import torch"])
        proc, tx = self.venvtx_json("remove", "sglang", "--no-probe")
        self.assertEqual((proc.returncode, tx["probe"], tx["baseline"]), (0, None, None))
        proc, tx = self.venvtx_json("rollback", "--probe", "import sys")  # a flag wins over the saved one
        self.assertEqual(tx["probe"]["code"], ["import sys"])

    def test_config_lists_sets_and_unsets(self):
        proc, doc = self.venvtx_json("config")
        self.assertEqual({s["source"] for s in doc["settings"]}, {"default"})
        self.ok("config", "probe", "import torch", "import sglang")
        self.ok("config", "keep", "7")
        self.ok("config", "gpus", "none")
        proc, doc = self.venvtx_json("config")
        settings = {s["key"]: (s["value"], s["source"]) for s in doc["settings"]}
        self.assertEqual(settings["probe"], (["import torch", "import sglang"], "store"))
        self.assertEqual(settings["keep"], ("7", "store"))
        self.assertEqual(settings["gpus"], ("none", "store"))
        self.assertEqual(settings["preview"], ("auto", "default"))
        proc, gc = self.venvtx_json("gc", "--dry-run")
        self.assertEqual(gc["policy"]["keep_last"], 7)  # one policy, whichever command set it
        self.ok("config", "probe", "--unset")
        self.assertIn("probe = (not set)", self.ok("config", "probe").stdout)
        for bad in (["gpus", "lots"], ["keep", "0"], ["preview", "sometimes"], ["probe-timeout", "-1"],
                    ["colour", "blue"], ["keep", "--unset", "3"]):
            before = self.venvtx_json("config")[1]
            proc = self.venvtx("config", *bad)
            self.assertOneLineError(proc, 2)
            self.assertEqual(self.venvtx_json("config")[1], before, bad)


class DryRuns(CliCase):
    def test_install_says_before_and_after_from_the_installer(self):
        before = tree_hash(self.venv)
        proc = self.ok("install", "--installer", "pip", BROKEN_TORCH, "--dry-run", *self.wheel_args)
        self.assertIn("torch 2.11.0 → 2.12.0", proc.stdout)
        proc, plan = self.venvtx_json("install", "--installer", "pip", BROKEN_TORCH, "--dry-run", *self.wheel_args)
        self.assertEqual(plan["packages"], [{"name": "torch", "before": "2.11.0", "after": "2.12.0"}])
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))

    def test_run_says_what_it_changed_in_a_view(self):
        self.ok("remove", "flash-attn")
        before = tree_hash(self.venv)
        proc, plan = self.venvtx_json("run", "--dry-run", "--", "python", "-m", "pip", "install", "-q",
                                      "flash-attn", *self.wheel_args[1:])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(plan["packages"], [{"name": "flash-attn", "before": None, "after": "2.8.3"}])
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_rollback_says_what_it_would_undo_and_whether_drift_refuses_it(self):
        self.ok("remove", "flash-attn")
        self.ok("remove", "sglang")
        proc = self.ok("rollback", "--to", "0", "--dry-run")
        self.assertIn("would undo tx 2 (remove), 1 (remove) as one transaction", proc.stdout)
        self.assertIn("flash-attn ∅ → 2.8.3", proc.stdout)
        proc, plan = self.venvtx_json("rollback", "--to", "0", "--dry-run")
        self.assertEqual(plan["undoes"], [2, 1])
        self.assertEqual(sorted(p["name"] for p in plan["packages"]), ["flash-attn", "sglang"])
        self.assertIsNone(plan["refused"])
        site_rel = os.path.relpath(self.site, self.venv)
        self.assertIn(site_rel + "/sglang/__init__.py", plan["paths"])
        os.makedirs(os.path.join(self.site, "sglang"))
        with open(os.path.join(self.site, "sglang", "__init__.py"), "w") as f:
            f.write("# not the one venvtx keeps\n")
        before = tree_hash(self.venv)
        proc = self.venvtx("rollback", "--to", "0", "--dry-run")
        self.assertEqual(proc.returncode, 6, proc.stdout + proc.stderr)
        self.assertIn("it would be refused", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(self.log_ids(), [2, 1])


class Arguments(CliCase):
    def test_a_command_without_dashes_is_shown_where_it_goes(self):
        proc = self.venvtx("run", "pip", "install", "x")
        self.assertOneLineError(proc, 2)
        self.assertIn("venvtx --venv %s run -- pip install x" % self.venv, proc.stderr)
        proc = self.venvtx("install", "flash-attn", "--no-index", "--find-links", "W")
        self.assertOneLineError(proc, 2)
        self.assertIn("install flash-attn -- --no-index --find-links W", proc.stderr)

    def test_everything_after_dashes_goes_to_the_installer(self):
        self.ok("remove", "flash-attn")
        requirements = os.path.join(self.tmp, "requirements.txt")
        with open(requirements, "w") as f:
            f.write("flash-attn==2.8.3\n")
        proc = self.venvtx("install", "--installer", "pip", "--", "-r", requirements, *self.wheel_args[1:])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.python("import flash_attn").returncode, 0)
        self.assertOneLineError(self.venvtx("install"), 2)

    def test_pip_uninstall_without_yes_is_refused_before_it_runs(self):
        before = tree_hash(self.venv)
        # `python -m pip`: a copied venv's bin/pip still names the venv it was copied from.
        for pip in (["pip"], ["python", "-m", "pip"]):
            proc = self.venvtx("run", "--", *pip, "uninstall", "flash-attn")
            self.assertOneLineError(proc, 2)
            self.assertIn("pass -y", proc.stderr)
            self.assertNotIn("Traceback", proc.stdout + proc.stderr)
            self.assertTreeEqual(before, tree_hash(self.venv))
        self.ok("run", "--", "python", "-m", "pip", "uninstall", "-y", "flash-attn")
        self.assertNotEqual(self.python("import flash_attn").returncode, 0)

    def test_an_installer_that_died_on_its_question_gets_a_hint(self):
        # A conda that asks, as conda does, and dies on the EOF it reads from /dev/null.
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "conda"), "w") as f:
            f.write('#!/bin/sh\necho "Proceed ([y]/n)? "\nread answer || { echo EOFError >&2; exit 1; }\n')
        os.chmod(os.path.join(bin_dir, "conda"), 0o755)
        env = dict(self.env, PATH=bin_dir + os.pathsep + self.env["PATH"])
        before = tree_hash(self.venv)
        proc = self.venvtx("run", "--", "conda", "remove", "x", env=env)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("pass -y", proc.stderr.splitlines()[-1])
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("run", "--", "conda", "remove", "-y", "x", env=env)  # answered: no hint
        self.assertNotIn("pass -y", proc.stderr)


class Hygiene(CliCase):
    def test_a_command_that_changes_nothing_records_nothing(self):
        self.ok("remove", "flash-attn")
        proc = self.ok("run", "--", "sleep", "0.1")
        self.assertIn("nothing changed", proc.stdout)
        proc, doc = self.venvtx_json("run", "--", "true")
        self.assertEqual((doc["changed"], doc.get("id")), (False, None))
        self.assertEqual(self.log_ids(), [1])
        self.assertEqual(self.ok("-q", "remove", "sglang").stdout, "2\n")  # -q: the id alone

    def test_show_newest_and_log_without_the_footer(self):
        self.ok("remove", "flash-attn")
        self.ok("stamp", "--comment", "after")
        proc, shown = self.venvtx_json("show")
        self.assertEqual((shown["id"], shown["kind"]), (2, "stamp"))
        self.assertTrue(self.ok("show").stdout.startswith("entry 2: stamp") or "stamp" in self.ok("show").stdout)
        lines = self.ok("log").stdout.splitlines()
        self.assertEqual(len(lines), 3, lines)  # the column names, then newest first
        self.assertRegex(lines[0], r"^\s+ID\s+STATE\s+KIND\s+AT \(UTC\)\s+BY  WHAT")
        self.assertRegex(lines[2], r"^\s+1\s+committed\s+remove .*flash-attn 2\.8\.3 → ∅$")
        self.assertEqual(self.ok("-q", "log").stdout.splitlines(), lines[1:])
        self.assertTrue(self.ok("-v", "log").stdout.splitlines()[-1].startswith("store: "))

    def test_keep_going_in_place_is_one_transaction_that_names_its_attempts(self):
        proc, tx = self.venvtx_json("remove", "nvidia-*-cu13", "flash-attn", "--keep-going", "--preview", "never",
                                    "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(tx["state"], "committed")
        attempts = tx["keep_going"]["attempts"]
        self.assertTrue(attempts, tx["keep_going"])
        for attempt in attempts:
            proc, shown = self.venvtx_json("show", str(attempt))
            self.assertEqual(shown["details"]["part_of"], tx["id"])
            self.assertEqual(shown["state"], "rolled_back")
        proc, shown = self.venvtx_json("show", str(tx["id"]))
        self.assertEqual(shown["keep_going"], tx["keep_going"])
        text = self.ok("show", str(tx["id"])).stdout
        for verdict in tx["keep_going"]["removed"]:
            self.assertIn("    removed " + verdict["name"], text)
        for verdict in tx["keep_going"]["kept"]:
            self.assertIn("    kept    %s: %s" % (verdict["name"], verdict["reason"]), text)
        self.assertIn("part of  the --keep-going search of tx %d" % tx["id"], self.ok("show", str(attempts[0])).stdout)


if __name__ == "__main__":
    unittest.main()
