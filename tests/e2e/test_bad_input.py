"""Bad input: a one-line error, the contract's exit code, and nothing lost (issue 2, Done when 5)."""
import json
import os
import time
import unittest

from support import VENVTX, VenvTestCase, flat, tree_hash
import subprocess


class BadInput(VenvTestCase):
    def dist_info(self, prefix):
        return os.path.join(self.site, [d for d in os.listdir(self.site)
                                        if d.startswith(prefix) and d.endswith(".dist-info")][0])

    def test_no_venv_found(self):
        proc = subprocess.run([VENVTX, "remove", "sglang"], capture_output=True, text=True,
                              env=self.env, cwd=self.tmp)
        self.assertOneLineError(proc, 2)
        self.assertIn("no venv found", proc.stderr)

    def test_venv_flag_naming_a_plain_directory(self):
        proc = subprocess.run([VENVTX, "--venv", self.tmp, "log"], capture_output=True, text=True,
                              env=self.env)
        self.assertOneLineError(proc, 2)
        self.assertIn("not a venv", proc.stderr)

    def test_pattern_matching_nothing(self):
        before = tree_hash(self.venv)
        # Not installed is already gone (as pip): exit 0, nothing changed, a warning for each.
        proc = self.venvtx("remove", "no-such-dist*", "nor-this")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("skipping 'no-such-dist*'", proc.stderr)
        self.assertIn("skipping 'nor-this'", proc.stderr)
        self.assertEqual(before, tree_hash(self.venv))
        proc = self.venvtx("--json", "remove", "no-such-dist*")
        document = json.loads(proc.stdout)
        self.assertEqual((proc.returncode, document["changed"], document["transaction"]), (0, False, None))
        self.assertEqual(document["plan"]["unmatched"], ["no-such-dist*"])
        for args in (["no-such-dist*", "nor-this", "--strict"], ["sglang", "no-such-dist*", "--strict"]):
            proc = self.venvtx("remove", *args)
            self.assertOneLineError(proc, 2)
            self.assertIn("no-such-dist*", proc.stderr)
            self.assertEqual(before, tree_hash(self.venv))
            proc, document = self.venvtx_json("remove", *args)
            self.assertEqual(document["error"]["kind"], "no_match")
            self.assertIn("no-such-dist*", document["error"]["details"]["patterns"])
        # As pip skips what is not installed: a warning, and the rest removed.
        proc = self.venvtx("remove", "sglang", "no-such-dist*")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "venvtx: warning: skipping 'no-such-dist*': no installed distribution "
                                      "matches it (--strict refuses)\n")
        self.assertNotEqual(before, tree_hash(self.venv))
        self.assertNotEqual(self.python("import sglang").returncode, 0)

    def test_missing_record(self):
        os.unlink(os.path.join(self.dist_info("flash_attn"), "RECORD"))
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertOneLineError(proc, 2)
        self.assertIn("no RECORD", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_unreadable_record(self):
        record = os.path.join(self.dist_info("flash_attn"), "RECORD")
        os.unlink(record)
        os.mkdir(record)  # as root, a mode does not stop a read; a directory does (EISDIR)
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertOneLineError(proc, 2)
        self.assertIn("cannot read flash-attn's RECORD", proc.stderr)
        self.assertIn("Is a directory", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_an_empty_store_and_a_negative_wait(self):
        before = tree_hash(self.venv)
        for args, words in ((["--store", "", "log"], "--store names no directory"),
                            (["remove", "sglang", "--wait", "-1"], "--wait: must be a number of seconds from 0"),
                            (["gc", "--wait", "-1"], "--wait: must be a number of seconds from 0"),
                            (["recover", "--wait", "-1"], "--wait: must be a number of seconds from 0")):
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertIn(words, proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_nothing_to_undo_or_redo_without_a_history(self):
        for args, words in ((["rollback"], "nothing to roll back: no venvtx history"),
                            (["rollback", "--redo"], "nothing to redo: no venvtx history")):
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertIn(words, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))

    def test_history_queries_without_a_history_say_how_to_start_one(self):
        for args in (["freeze"], ["freeze", "--at", "1"], ["diff", "1", "now"], ["status"],
                     ["sync", "--to", "1"]):
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertIn("no venvtx history yet", proc.stderr)
            self.assertIn("`venvtx stamp` records the venv's state as it is", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))

    def test_a_what_if_without_a_preview(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "sglang", "--dry-run", "--probe", "import sglang", "--preview", "never")
        self.assertOneLineError(proc, 2)  # not exit 0 as if the probe had passed: it cannot run
        self.assertIn("--preview never", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_malformed_record(self):
        with open(os.path.join(self.dist_info("flash_attn"), "RECORD"), "a") as f:
            f.write('flash_attn/"oops.py,sha256=abc\n')
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertOneLineError(proc, 2)
        self.assertIn("malformed RECORD", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_a_mistyped_command_or_name_gets_a_suggestion_and_help_names_any_command(self):
        # issue 40: "did you mean" for commands and distribution names; `venvtx help CMD`
        proc = self.venvtx("remve", "sglang")
        self.assertOneLineError(proc, 2)
        self.assertIn("did you mean 'remove'?", proc.stderr)
        proc = self.venvtx("remove", "sglng", "--strict")
        self.assertOneLineError(proc, 2)
        self.assertIn("(did you mean 'sglang'?)", proc.stderr)
        self.assertIn("(did you mean 'sglang'?)", self.venvtx("remove", "sglng").stderr)  # skipped, exit 0
        self.assertNotIn("did you mean", self.venvtx("remove", "no-such-thing-at-all").stderr)
        for args in (["rollback"], ["guard"], []):
            helped = self.venvtx("help", *args)
            self.assertEqual(helped.returncode, 0, helped.stderr)
            self.assertEqual(helped.stdout, self.venvtx(*args, "--help").stdout, args)
        proc = self.venvtx("help", "rollbak")
        self.assertOneLineError(proc, 2)
        self.assertIn("did you mean 'rollback'?", proc.stderr)

    def test_record_entry_escaping_the_venv(self):
        canary = os.path.join(self.tmp, "canary")
        with open(canary, "w") as f:
            f.write("still here")
        escape = os.path.relpath(canary, self.site)
        self.assertTrue(escape.startswith("../../../.."))
        with open(os.path.join(self.dist_info("flash_attn"), "RECORD"), "a") as f:
            f.write("%s,,\n" % escape)
        before = tree_hash(self.venv)
        # --strict refuses the whole removal; without it the path is skipped by name, as pip
        # skips what lies outside its prefix, and everything inside the venv goes.
        proc = self.venvtx("remove", "flash-attn", "--strict")
        self.assertOneLineError(proc, 2)
        self.assertIn("outside the venv", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("not removing '%s'" % escape, proc.stderr)
        self.assertEqual([d for d in os.listdir(self.site) if d.startswith("flash_attn")], [])
        with open(canary) as f:
            self.assertEqual(f.read(), "still here")
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_symlink_in_site_packages_pointing_outside(self):
        target_dir = os.path.join(self.tmp, "outside")
        os.mkdir(target_dir)
        target = os.path.join(target_dir, "data.bin")
        with open(target, "w") as f:
            f.write("precious")
        link = os.path.join(self.site, "flash_attn", "data_link")
        os.symlink(target, link)
        dir_link = os.path.join(self.site, "flash_attn", "dir_link")
        os.symlink(target_dir, dir_link)
        with open(os.path.join(self.dist_info("flash_attn"), "RECORD"), "a") as f:
            f.write("flash_attn/data_link,,\nflash_attn/dir_link,,\n")
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(os.path.lexists(link))
        self.assertFalse(os.path.lexists(dir_link))
        with open(target) as f:
            self.assertEqual(f.read(), "precious")
        self.assertEqual(os.listdir(target_dir), ["data.bin"])
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertEqual(os.readlink(link), target)

    def test_console_script_name_escaping_the_venv(self):
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("not yours")
        with open(os.path.join(self.dist_info("flash_attn"), "entry_points.txt"), "w") as f:
            f.write("[console_scripts]\n%s = flash_attn:main\n" % os.path.relpath(victim, os.path.join(self.venv, "bin")))
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "flash-attn")
        self.assertOneLineError(proc, 2)
        self.assertTreeEqual(before, tree_hash(self.venv))
        with open(victim) as f:
            self.assertEqual(f.read(), "not yours")

    def test_record_path_through_symlinked_directory_escaping(self):
        outside = os.path.join(self.tmp, "elsewhere")
        os.mkdir(outside)
        with open(os.path.join(outside, "victim.py"), "w") as f:
            f.write("x = 1\n")
        os.symlink(outside, os.path.join(self.site, "flash_attn", "sneaky"))
        with open(os.path.join(self.dist_info("flash_attn"), "RECORD"), "a") as f:
            f.write("flash_attn/sneaky/victim.py,,\n")
        before = tree_hash(self.venv)
        outside_before = tree_hash(outside)
        proc = self.venvtx("remove", "flash-attn", "--strict")
        self.assertOneLineError(proc, 2)
        self.assertTreeEqual(before, tree_hash(self.venv))
        # Without --strict the path is skipped by name (it resolves outside the venv), and the
        # package goes whole with its link, as pip removes it; what the link points to stays.
        proc = self.venvtx("remove", "flash-attn")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("not removing 'flash_attn/sneaky/victim.py'", proc.stderr)
        self.assertEqual([d for d in os.listdir(self.site) if d.startswith("flash_attn")], [])
        self.assertTreeEqual(outside_before, tree_hash(outside))
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_a_probe_that_is_not_python_is_refused_before_anything_runs(self):
        # issue 40: a typo in the probe is the probe's fault, said at once, never "the venv fails it"
        tree = tree_hash(self.venv)
        for args in (["remove", "flash-attn", "--probe", "import torch)"],
                     ["remove", "flash-attn", "--probe", "pass", "--probe", "if True print(1)"],
                     ["config", "probe", "import (("]):
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertIn("the probe is not valid Python: probe %d: SyntaxError" % (2 if "pass" in args else 1),
                          proc.stderr)
        self.assertEqual(tree_hash(self.venv), tree)
        self.assertIn("probe = (not set)", self.venvtx("config").stdout)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx", "objects")) and
                         self.store_index().execute("SELECT count(*) FROM transactions WHERE kind = 'remove'")
                         .fetchone()[0] > 0)

    def test_a_probe_that_fails_the_same_way_before_and_after_is_called_the_probes_fault(self):
        # issue 40, item 7: valid Python that raises SyntaxError (or NameError) whatever the venv,
        # or a probe too slow for its timeout both times; show and -v print its traceback's tail
        tree = tree_hash(self.venv)
        for preview, probe, timeout, said in (
                ("always", 'exec("x y")', "30", "(SyntaxError: invalid syntax): the probe's own fault"),
                ("never", "import torch; torhc.cuda", "30", "(NameError: name 'torhc' is not defined)"),
                ("always", "import time; time.sleep(30)", "1", "the probe timed out before and after the change")):
            proc = self.venvtx("-v", "remove", "flash-attn", "--preview", preview, "--probe-timeout", timeout,
                               "--probe", probe)
            self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
            self.assertIn(said, proc.stdout)
            self.assertTreeEqual(tree, tree_hash(self.venv))
            shown = self.venvtx("show").stdout
            self.assertIn("  probe    " + ("the probe timed out" if timeout == "1" else "the probe fails the same way"),
                          shown)
            if timeout != "1":
                self.assertIn("    | Traceback (most recent call last):", shown)
                self.assertIn("output, its last lines:\n    | Traceback (most recent call last):", proc.stderr)
        # a venv that fails the same way before and after is the venv's, not the probe's
        proc = self.venvtx("remove", "flash-attn", "--probe", "import no_such_module")
        self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
        self.assertNotIn("the probe's own fault", proc.stdout)

    def test_hanging_probe_is_killed_and_restored(self):
        before = tree_hash(self.venv)
        started = time.monotonic()
        proc = self.venvtx("remove", "sglang", "--no-baseline", "--probe-timeout", "1", "--probe",
                           "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)")
        elapsed = time.monotonic() - started
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("timed out", proc.stdout)
        self.assertLess(elapsed, 30)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_gpu_count_dropping_below_baseline_fails(self):
        seq = os.path.join(self.tmp, "gpus.seq")
        with open(seq, "w") as f:
            f.write("2\n1\n")
        env = dict(self.env, VENVTX_FAKE_GPUS_SEQ=seq)
        before = tree_hash(self.venv)
        # In place: the baseline then the probe, in that order (a preview runs them side by side).
        proc = self.venvtx("remove", "sglang", "--preview", "never", "--probe", "import torch", env=env)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("expected 2 GPUs, torch sees 1", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_one_bad_gpu_is_named_and_others_reported(self):
        env = dict(self.env, VENVTX_FAKE_GPUS="3:bad=1")
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("remove", "sglang", "--probe", "import torch", env=env)
        self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
        self.assertEqual(tx["state"], "aborted")
        gpus = tx["baseline"]["gpus"]
        self.assertEqual([g["ok"] for g in gpus], [True, False, True])
        self.assertIn("illegal memory access", gpus[1]["error"])
        self.assertIn("GPU 1", tx["baseline"]["error"])
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_gpus_exact_count(self):
        env = dict(self.env, VENVTX_FAKE_GPUS="2")
        proc = self.venvtx("remove", "sglang", "--gpus", "4", "--probe", "import torch", env=env)
        self.assertEqual(proc.returncode, 4, proc.stdout + proc.stderr)
        proc = self.venvtx("remove", "sglang", "--gpus", "2", "--probe", "import torch", env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_unknown_option(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "sglang", "--frobnicate")
        self.assertOneLineError(proc, 2)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_errors_under_json(self):
        proc = self.venvtx("--json", "remove", "nothing-like-this", "--strict")
        self.assertEqual(proc.returncode, 2)
        document = flat(json.loads(proc.stdout))
        self.assertEqual(document["error"]["exit_code"], 2)
        self.assertIn("nothing-like-this", document["error"]["message"])

    def test_dry_run_changes_nothing(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "nvidia-*-cu13", "--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("nvidia-cudnn-cu13", proc.stdout)
        self.assertTreeEqual(before, tree_hash(self.venv))
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))


if __name__ == "__main__":
    unittest.main()


class ConventionalCli(VenvTestCase):
    """Options anywhere, --version, readable messages for unknown commands and bad numbers, and
    nothing left in the venv by a command that fails on bad input."""

    def plain(self, *args):
        return subprocess.run([VENVTX, *args], capture_output=True, text=True, env=self.env, cwd=self.tmp,
                              timeout=60)

    def test_global_options_after_the_subcommand(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        proc = self.plain("log", "--json", "--venv", self.venv)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([t["kind"] for t in flat(json.loads(proc.stdout))], ["remove"])
        proc = self.plain("show", "1", "-q", "--venv", self.venv, "--json")
        self.assertEqual(flat(json.loads(proc.stdout))["id"], 1)

    def test_version_plain_and_json(self):
        proc = self.plain("--version")
        self.assertEqual(proc.returncode, 0)
        self.assertRegex(proc.stdout.strip(), r"^venvtx \d+\.\d+\.\d+$")
        proc = self.plain("--json", "--version")
        self.assertRegex(flat(json.loads(proc.stdout))["version"], r"^\d+\.\d+\.\d+$")

    def test_unknown_command(self):
        proc = self.plain("--venv", self.venv, "bogus")
        self.assertOneLineError(proc, 2)
        self.assertIn("unknown command 'bogus'", proc.stderr)
        proc = self.plain("--json", "bogus")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("unknown command", flat(json.loads(proc.stdout))["error"]["message"])

    def test_numbers_out_of_range_read_plainly(self):
        for args, words in ((["log", "-n", "0"], "1 or more"),
                            (["remove", "sglang", "--probe-timeout", "0"], "above 0"),
                            (["rollback", "--to", "99999999999999999999"], "not an entry id"),
                            (["show", "0"], "not a transaction id")):
            before = tree_hash(self.venv)
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertIn(words, proc.stderr)
            self.assertNotIn("000000", proc.stderr)
            self.assertEqual(before, tree_hash(self.venv))

    def test_bad_input_leaves_no_store_or_lock(self):
        for args in (["remove", "nosuch", "--strict"], ["run", "--", "/nonexistent/cmd"], ["why", ""]):
            proc = self.venvtx(*args)
            self.assertOneLineError(proc, 2)
            self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")), args)
            self.assertFalse(os.path.exists(os.path.join(self.venv, ".lock")), args)
        self.assertIn("command not found: /nonexistent/cmd", self.venvtx("run", "--", "/nonexistent/cmd").stderr)

    def test_recover_json_is_a_document(self):
        proc, document = self.venvtx_json("recover")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(document, {"recovered": []})

    def test_show_quotes_the_recorded_command(self):
        self.assertEqual(self.venvtx("remove", "flash-attn", "--probe", "import torch").returncode, 0)
        proc = self.venvtx("show", "1")
        self.assertIn("--probe 'import torch'", proc.stdout)
