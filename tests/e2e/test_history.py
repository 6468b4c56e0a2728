"""The venv's history of states (issue 25): changes made outside venvtx as entries, stamps,
tracked runs and what they loaded, status/diff/freeze, rollback --to as one transaction,
rollback of one older transaction, and a store bound to its venv. Real pip, real ELF loading;
trees compared with the tests' own hashing."""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import unittest

from support import VENVTX, VenvTestCase, flat, perf_events_allowed, tree_hash

CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]


class HistoryCase(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()

    def pip(self, *args):
        proc = subprocess.run([os.path.join(self.venv, "bin", "python"), "-m", "pip", *args],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def pip_install(self, *specs):
        self.pip("install", "-q", *self.wheel_args[1:], *specs)

    def drop_holds(self):
        """The store as one made before states held their files (or after gc dropped them)."""
        shutil.rmtree(os.path.join(self.venv, ".venvtx", "holds"))
        with self.store_index() as db:
            db.execute("DELETE FROM holds")
            db.execute("DELETE FROM held_dists")

    def log(self):
        proc, entries = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return entries

    @staticmethod
    def mapped_files(shown):
        """{distribution: [file names]} of the venv's files a shown run mapped."""
        return {d["name"]: [os.path.basename(f) for f in d["files"]] for d in shown["details"]["dists"]}

    def installed(self):
        """{normalized name: version} read from the dist-infos by this test, not by venvtx."""
        found = {}
        for entry in os.listdir(self.site):
            if entry.endswith(".dist-info"):
                with open(os.path.join(self.site, entry, "METADATA")) as metadata:
                    fields = dict(line.split(": ", 1) for line in metadata.read().split("\n\n")[0].splitlines()
                                  if ": " in line)
                found[fields["Name"].lower().replace("_", "-").replace(".", "-")] = fields["Version"]
        return found


class TheIncident(HistoryCase):
    """The story's question: were the cu13 libraries there during the fast run?"""

    def test_a_run_then_plain_pip_changes(self):
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", os.path.join(self.venv, "bin", "python"),
                              "-c", "import torch; print('fast run')"], capture_output=True, text=True, env=self.env)
        # The run's own output and status, untouched.
        self.assertEqual((run.returncode, run.stdout), (0, "fast run\n"), run.stderr)
        self.pip("uninstall", "-q", "-y", *CU13)
        self.assertEqual(self.venvtx("log").returncode, 0)  # a user looks: the removal is recorded here
        self.pip_install("nvidia-cudnn-cu13", "nvidia-nccl-cu13")
        entries = self.log()
        outside = [e for e in entries if e["kind"] == "outside"]
        self.assertEqual(len(outside), 2, entries)
        removal, reinstall = outside[1], outside[0]  # newest first
        self.assertEqual(sorted((p["name"], p["before"], p["after"]) for p in removal["packages"]),
                         sorted((name, v, None) for name, v in zip(CU13, ["9.19.0.56", "0.8.1", "2.28.9", "3.4.5"])))
        self.assertEqual(sorted((p["name"], p["before"], p["after"]) for p in reinstall["packages"]),
                         [("nvidia-cudnn-cu13", None, "9.19.0.56"), ("nvidia-nccl-cu13", None, "2.28.9")])
        self.assertEqual(reinstall["details"]["installers"], ["pip"])
        for entry in outside:
            self.assertEqual(entry["state"], "recorded")
            self.assertTrue(entry["user"] and entry["host"] and entry["venvtx_version"], entry)
        text = self.venvtx("log").stdout.splitlines()
        marked = [line for line in text if " > " in line]
        self.assertEqual(len(marked), 2, text)
        self.assertIn("nvidia-nccl-cu13 ∅ → 2.28.9", marked[0])
        # Running the log again records nothing more: each outside change appears once.
        self.assertEqual(len(self.log()), len(entries))
        run_id = [e for e in entries if e["kind"] == "exec"][0]["id"]
        proc, diff = self.venvtx_json("diff", str(run_id), "now", "--libs")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lost = {item["library"] for item in diff["libraries"]["lost"]}
        self.assertEqual(lost, {"libcusparseLt.so.0", "libnvshmem_host.so.3"})
        text = self.venvtx("diff", str(run_id), "--libs").stdout
        self.assertIn("lost: libcusparseLt.so.0 (nvidia-cusparselt-cu13 0.8.1)", text)
        self.assertIn("nvidia-nvshmem-cu13: 3.4.5 → ∅", text)
        # where the libraries are the same, -v names them (issue 40, item 10)
        same = self.venvtx("-v", "diff", "now", "now", "--libs").stdout
        provided = json.loads(self.venvtx("--json", "diff", "now", "now", "--libs").stdout)["libraries"]["after"]
        self.assertIn("libraries: the same %d on both sides:" % len(provided), same)
        self.assertIn("\n    libcudnn.so.9 (nvidia-cudnn-cu13 9.19.0.56)", same)
        proc, shown = self.venvtx_json("show", str(run_id))
        mapped = self.mapped_files(shown)
        self.assertEqual(mapped["nvidia-cusparselt-cu13"], ["libcusparseLt.so.0"])
        self.assertEqual(mapped["nvidia-nvshmem-cu13"], ["libnvshmem_host.so.3"])
        self.assertEqual(mapped["nvidia-nccl-cu13"], ["libnccl.so.2"])
        self.assertEqual(mapped["nvidia-cudnn-cu13"], ["libcudnn.so.9"])
        self.assertIn("libcusparseLt.so.0", self.venvtx("show", str(run_id)).stdout)

    def test_exec_runs_a_bare_python_in_the_venv(self):
        # issue 40: `venvtx exec -- python ...` means the venv's python, as `uv run` does, with
        # PATH and VIRTUAL_ENV set; the run maps the venv's libraries
        env = dict(self.env, PATH="/usr/bin:/bin")
        env.pop("PYTHONHOME", None)
        run = subprocess.run([VENVTX, "--venv", self.venv, "--json", "exec", "--", "python", "-c",
                              "import os, sys, torch; print(sys.prefix, os.environ['VIRTUAL_ENV'])"],
                             capture_output=True, text=True, env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.split(), [self.venv, os.path.realpath(self.venv)], run.stdout)
        proc, shown = self.venvtx_json("show")
        self.assertEqual(shown["kind"], "exec", shown)
        mapped = {d["name"] for d in shown["details"]["dists"]}
        self.assertTrue({"torch", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"} <= mapped, shown["details"])

    def test_a_job_killed_by_a_signal_ends_exec_the_same_way(self):
        # issue 41: -11 as without venvtx (a shell says "Segmentation fault"), not an exit of 139
        job = ["sh", "-c", "kill -SEGV $$"]
        self.assertEqual(subprocess.run(job).returncode, -11)
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", *job], capture_output=True, text=True,
                             env=self.env)
        self.assertEqual(run.returncode, -11, run.stderr)
        proc, shown = self.venvtx_json("show")
        self.assertEqual((shown["kind"], shown["details"]["exit_status"]), ("exec", 139), shown["details"])

    def test_a_sigstop_stops_the_job_until_sigcont(self):
        # issue 41, item 8: under ptrace a group-stop was resumed at once; now the job stays stopped
        pidfile, marks = os.path.join(self.tmp, "job.pid"), os.path.join(self.tmp, "job.marks")
        job = "echo $$ > %s; kill -STOP $$; echo resumed >> %s" % (pidfile, marks)
        run = subprocess.Popen([VENVTX, "--venv", self.venv, "exec", "--", "sh", "-c", job], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)
        self.assertFalse(os.path.exists(marks), "the job ran on after its SIGSTOP")
        self.assertIsNone(run.poll())
        with open(pidfile) as f:
            os.kill(int(f.read()), signal.SIGCONT)
        out, err = run.communicate(timeout=30)
        self.assertEqual(run.returncode, 0, err)
        with open(marks) as f:
            self.assertEqual(f.read(), "resumed\n")

    def test_a_job_may_trace_and_is_then_sampled(self):
        # issue 41, item 8: `exec -- strace ...` failed (PTRACE_TRACEME: Operation not permitted)
        if shutil.which("strace") is None:
            self.skipTest("no strace here")
        job = ["strace", "-f", "-o", os.devnull, "python", "-c", "import time, torch; time.sleep(1.5)"]
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", *job], capture_output=True, text=True,
                             env=self.env, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        proc, shown = self.venvtx_json("show")
        self.assertEqual((shown["kind"], shown["details"]["traced"]), ("exec", False), shown["details"])
        mapped = {d["name"] for d in shown["details"]["dists"]}
        self.assertIn("torch", mapped, shown["details"])  # sampled, children found through /proc
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--no-trace", "--", "true"], capture_output=True,
                             text=True, env=self.env)
        self.assertEqual(run.returncode, 0, run.stderr)
        proc, shown = self.venvtx_json("show")
        self.assertFalse(shown["details"]["traced"])

    def test_a_tracer_a_script_starts_is_let_go_and_sampled(self):
        # issue 41, item 8: a tracer not named on exec's command line (a script's `strace -f CMD`)
        # found its child traced by venvtx already (PTRACE_TRACEME: Operation not permitted,
        # exit 1); now it is let go at its exec, and what it runs is sampled
        if shutil.which("strace") is None:
            self.skipTest("no strace here")
        traced = 'strace -f -o /dev/null python -c "import time, torch; time.sleep(1.5)"'
        for script in (traced + "; echo done", "exec " + traced):  # a child of the job; the job itself
            run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", "sh", "-c", script],
                                 capture_output=True, text=True, env=self.env, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            proc, shown = self.venvtx_json("show")
            self.assertTrue(shown["details"]["traced"], shown["details"])
            self.assertIn("torch", {d["name"] for d in shown["details"]["dists"]}, (script, shown["details"]))

    def test_a_library_mapped_before_an_execve_is_recorded(self):
        # issue 41, item 8: an exec stop comes after the old image is gone, and a sample a second
        # (ten, untraced) missed a library mapped just before; the kernel's mmap records keep it
        if not perf_events_allowed():
            self.skipTest("perf events are refused here: only samples can see such a library")
        library = os.path.join(self.site, "nvidia", "cusparselt", "lib", "libcusparseLt.so.0")
        self.assertTrue(os.path.exists(library), library)
        code = "import ctypes, os, sys; ctypes.CDLL(sys.argv[1]); os.execv('/bin/true', ['true'])"
        for flags in ([], ["--no-trace"]):
            run = subprocess.run([VENVTX, "--venv", self.venv, "exec", *flags, "--", "python", "-c", code, library],
                                 capture_output=True, text=True, env=self.env)
            self.assertEqual(run.returncode, 0, run.stderr)
            proc, shown = self.venvtx_json("show")
            mapped = self.mapped_files(shown)
            self.assertEqual(mapped.get("nvidia-cusparselt-cu13"), ["libcusparseLt.so.0"], (flags, shown["details"]))

    def test_a_job_that_executes_a_setgid_program_costs_venvtx_no_cpu(self):
        # the kernel takes the mapping events off such a process and then reports them hung up
        # at every poll: read that way, venvtx spun a core for as long as the job ran
        if os.geteuid() != 0 or not perf_events_allowed():
            self.skipTest("needs root (a setgid program of another group) and perf events")
        program = os.path.join(self.tmp, "setgid-sleep")
        shutil.copy("/bin/sleep", program)
        os.chown(program, 0, 65534)
        os.chmod(program, 0o2755)
        for flags in ([], ["--no-trace"]):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run = subprocess.run([VENVTX, "--venv", self.venv, "exec", *flags, "--", program, "2"],
                                 capture_output=True, text=True, env=self.env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            self.assertEqual(run.returncode, 0, run.stderr)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            self.assertLess(cpu, 0.5, "venvtx used %.2f s of CPU over a 2 s job %s" % (cpu, flags))

    def test_a_file_mapped_for_reading_only_is_recorded_at_exit(self):
        # the kernel's records are of executable mappings; the maps read at each process's exit
        # stop give the rest (a weights file or a library mapped as data, by a job that ends at once)
        library = os.path.join(self.site, "nvidia", "nccl", "lib", "libnccl.so.2")
        code = ("import mmap, os, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); "
                "os._exit(0)")  # mapped still at the exit: Python's own teardown would unmap it first
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", "python", "-c", code, library],
                             capture_output=True, text=True, env=self.env)
        self.assertEqual(run.returncode, 0, run.stderr)
        proc, shown = self.venvtx_json("show")
        mapped = self.mapped_files(shown)
        self.assertEqual(mapped.get("nvidia-nccl-cu13"), ["libnccl.so.2"], shown["details"])

    def test_a_script_learns_its_runs_entry_and_show_types_its_command_back(self):
        # issue 40, item 11: the job owns stdout and stderr, so --record-to FILE says the entry id;
        # item 10: show gives the command as a shell would need it typed
        record = os.path.join(self.tmp, "run.json")
        code = "import sys; print('it ran'); sys.exit(3)"
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--record-to", record, "--", "python", "-c", code],
                             capture_output=True, text=True, env=self.env)
        self.assertEqual((run.returncode, run.stdout), (3, "it ran\n"), run.stderr)
        with open(record) as f:
            written = json.load(f)
        proc, log = self.venvtx_json("log")
        self.assertEqual(written, {"schema_version": 1, "entry": log[0]["id"], "exit_status": 3})
        shown = self.venvtx("show", str(written["entry"])).stdout
        self.assertIn("  command  python -c 'import sys; print('\\''it ran'\\''); sys.exit(3)'\n", shown)

    def test_exec_returns_with_its_job_and_leaves_what_the_job_left_running(self):
        # issue 41: a `cmd &` child or a daemon the job started does not hold venvtx; it keeps
        # running, not stopped, and what it mapped before the job ended is recorded
        marker = os.path.join(self.tmp, "still-running")
        job = ("python -c 'import torch, time, sys; time.sleep(6); open(sys.argv[1], \"w\").close()' %s "
               ">/dev/null 2>&1 & sleep 1; echo started" % marker)  # the child keeps no pipe of ours
        started = time.monotonic()
        run = subprocess.run([VENVTX, "--venv", self.venv, "exec", "--", "sh", "-c", job], capture_output=True,
                             text=True, env=self.env, timeout=60)
        self.assertEqual((run.returncode, run.stdout), (0, "started\n"), run.stderr)
        self.assertLess(time.monotonic() - started, 5)
        proc, shown = self.venvtx_json("show")
        self.assertIn("torch", {d["name"] for d in shown["details"]["dists"]}, shown["details"])
        deadline = time.monotonic() + 20
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertTrue(os.path.exists(marker), "the job's child was stopped or killed")


class OutsideEntriesTellTheTruth(HistoryCase):
    def test_an_outside_change_is_said_detected_at_its_windows_end_and_by_its_installer(self):
        # issue 40, item 9: not "by root@host" at the window's start, as if venvtx had made it
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        env = dict(self.env, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
        for args in (["uninstall", "-q", "-y", "flash-attn"],
                     ["install", "-q", "--no-index", "--find-links", self.wheel_args[3], "flash-attn"]):
            time.sleep(1.1)  # a window of its own, whole seconds apart
            pip = subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(self.venv, "bin", "python"),
                                  *args], capture_output=True, text=True, env=env)
            self.assertEqual(pip.returncode, 0, pip.stderr)
            time.sleep(1.1)
            shown = self.venvtx("show").stdout
            self.assertTrue(shown.splitlines()[0].startswith("%d: changed outside venvtx" % self.log()[0]["id"]), shown)
            detected = re.search(r"^  detected (\S+) by venvtx", shown, re.M)
            window = re.search(r"^  window   between (\S+) and (\S+)$", shown, re.M)
            self.assertTrue(detected and window, shown)
            self.assertEqual(detected.group(1), window.group(2))
            self.assertIn(" %s  " % detected.group(1), self.venvtx("log", "-n", "1").stdout)
        self.assertIn("(by pip, as INSTALLER says)", shown)


class LogFilters(HistoryCase):
    def test_kind_and_since_choose_what_log_shows_and_n_counts_what_is_shown(self):
        # issue 40, item 10: exec runs will outnumber the changes
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        for _ in range(2):
            self.assertEqual(self.venvtx("exec", "--", "true").returncode, 0)

        def kinds(*args):
            proc, listed = self.venvtx_json("log", *args)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            text = self.venvtx("log", *args).stdout.splitlines()
            self.assertEqual(len(text), len(listed) + 1 if listed else 1, text)  # a header above entries
            return [tx["kind"] for tx in listed]

        self.assertEqual(kinds("--kind", "remove"), ["remove"])
        self.assertEqual(kinds("--kind", "exec,stamp"), ["exec", "exec", "stamp"])
        self.assertEqual(kinds("--kind", "exec", "--kind", "remove", "-n", "2"), ["exec", "exec"])
        self.assertEqual(kinds("--since", "@-1h"), ["exec", "exec", "remove", "stamp"])
        self.assertEqual(kinds("--since", "2000-01-01"), ["exec", "exec", "remove", "stamp"])
        self.assertEqual(kinds("--since", "@2999-01-01"), [])
        self.assertEqual(self.venvtx("log", "--since", "@2999-01-01").stdout.strip(), "no entries match")
        proc = self.venvtx("log", "--kind", "remov")
        self.assertOneLineError(proc, 2)
        self.assertIn("did you mean 'remove'?", proc.stderr)
        self.assertOneLineError(self.venvtx("log", "--since", "yesterday"), 2)


class States(HistoryCase):
    def test_returning_to_a_state_gives_its_id(self):
        self.assertEqual(self.venvtx("stamp", "--comment", "start").returncode, 0)
        first = self.log()[0]["state_after"]
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.assertNotEqual(self.log()[0]["state_after"], first)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(self.log()[0]["state_after"], first)
        # And by plain pip: removed, then installed again from the same wheel.
        self.pip("uninstall", "-q", "-y", "flash-attn")
        self.venvtx("log")
        self.pip_install("flash-attn")
        proc, stamp = self.venvtx_json("stamp")
        self.assertEqual((stamp["kind"], stamp["state_after"]), ("stamp", first))

    def test_status_diff_and_freeze_against_the_tests_own_listing(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        at_stamp = self.installed()
        self.assertEqual(self.venvtx("status", "--exit-code").returncode, 0)
        self.pip("uninstall", "-q", "-y", "sglang")
        self.pip_install("torch==2.12.0")
        proc = self.venvtx("status", "--exit-code")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertIn("torch: 2.11.0 → 2.12.0", proc.stdout)
        self.assertIn("sglang: 0.5.5 → ∅", proc.stdout)
        proc, frozen = self.venvtx_json("freeze", "--at", "1")
        self.assertEqual({d["normalized"]: d["version"] for d in frozen["dists"]}, at_stamp)
        lines = self.venvtx("freeze", "--at", "1").stdout.split()
        self.assertEqual(len(lines), len(at_stamp))
        self.assertIn("torch==2.11.0", lines)
        now = self.installed()
        proc, diff = self.venvtx_json("diff", "1", "now", "--files")
        changed = {d["name"]: (d["before"], d["after"]) for d in diff["dists"]}
        expected = {name: (at_stamp.get(name), now.get(name)) for name in set(at_stamp) | set(now)
                    if at_stamp.get(name) != now.get(name)}
        self.assertEqual(changed, expected)
        flags = {(f["flag"], f["path"]) for f in diff["files"]}
        self.assertIn(("-", "sglang/__init__.py"), flags)
        self.assertIn(("+", "torch-2.12.0.dist-info/METADATA"), flags)
        self.assertIn(("M", "torch/version.py"), flags)  # the same path with other bytes: the schema's M
        # The outside change was recorded by `diff` itself, once: 1^ .. 2 is the same diff.
        proc, again = self.venvtx_json("diff", "1", "2")
        self.assertEqual(again["dists"], diff["dists"])
        self.assertEqual(self.venvtx("status", "--exit-code").returncode, 0)

    def test_status_files_against_record(self):
        self.put_pip_inside()  # no file in site-packages that no RECORD lists
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        time.sleep(2.1)  # the copy's files settle: their keys are cached by the next check
        proc, clean = self.venvtx_json("status", "--files", "--untracked")
        self.assertEqual(clean["files"], [], clean)  # and every file's key is cached now
        site = os.path.relpath(self.site, self.venv)
        same_size = os.path.join(self.site, "sglang", "__init__.py")
        with open(same_size, "r+b") as f:  # one byte, same size: only the hash can tell
            first = f.read(1)
            f.seek(0)
            f.write(b"#" if first != b"#" else b"_")
        os.unlink(os.path.join(self.site, "flash_attn", "__init__.py"))
        with open(os.path.join(self.site, "stray.py"), "w") as f:
            f.write("print('not from any wheel')\n")
        proc = self.venvtx("--json", "status", "--files", "--untracked", "--exit-code")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        found = {(f["what"], f["path"]) for f in flat(json.loads(proc.stdout))["files"]}
        self.assertEqual(found, {("content", os.path.join(site, "sglang", "__init__.py")),
                                 ("missing", os.path.join(site, "flash_attn", "__init__.py")),
                                 ("untracked", os.path.join(site, "stray.py"))})
        text = self.venvtx("status", "--files").stdout
        self.assertIn("content: %s/sglang/__init__.py (sglang)" % site, text)
        # Without --files no file was read: never "unchanged" after an edit in place.
        text = self.venvtx("status").stdout
        self.assertNotIn("unchanged", text)
        self.assertIn("no distribution changed since", text)
        self.assertIn("file contents not checked: `venvtx status --files`", text)

    def test_a_settled_venv_is_still_checked_after_a_change(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        time.sleep(2.1)  # settled: the next check remembers every dist-info's key (its fast path)
        self.assertEqual(self.venvtx("status", "--exit-code").returncode, 0)
        self.assertEqual(self.venvtx("status", "--exit-code").returncode, 0)
        self.pip("uninstall", "-q", "-y", "flash-attn")
        proc = self.venvtx("status", "--exit-code")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertIn("flash-attn: 2.8.3 → ∅", proc.stdout)

    def test_points_that_do_not_resolve_are_one_line_errors(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        for point in ("x", "99", "@yesterday", "@-1y", "1^^", "@-9223372036854775807d", "@-36526d"):
            self.assertOneLineError(self.venvtx("diff", point), 2)

    def test_time_points(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        proc = self.venvtx("diff", "@-1h")
        self.assertOneLineError(proc, 2)  # nothing recorded that early
        self.assertIn("no state that early", proc.stderr)
        proc, diff = self.venvtx_json("diff", "@-0s", "now")  # the newest state recorded by now
        self.assertEqual(diff["dists"], [])
        proc, diff = self.venvtx_json("diff", "0", "now")
        self.assertEqual([(d["name"], d["before"], d["after"]) for d in diff["dists"]], [("sglang", "0.5.5", None)])


class RollbackTo(HistoryCase):
    def prepared(self):
        before = tree_hash(self.venv)
        for args in (["remove", "sglang"], ["remove", "flash-attn"], ["remove", "nvidia-nvshmem-cu13", "--force"],
                     ["install", "torch==2.12.0", *self.wheel_args]):
            proc = self.venvtx(*args)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return before

    def test_a_failing_probe_leaves_the_venv_as_it_was_and_one_transaction(self):
        self.prepared()
        tree = tree_hash(self.venv)
        count = len(self.log())
        proc = self.venvtx("rollback", "--to", "1", "--no-baseline", "--probe", "import no_such_module")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        entries = self.log()
        self.assertEqual(len(entries), count + 1)
        self.assertEqual((entries[0]["kind"], entries[0]["state"]), ("rollback", "aborted"))  # previewed
        self.assertEqual(entries[0]["details"]["undoes"], [4, 3, 2])
        proc = self.venvtx("rollback", "--to", "1", "--no-baseline", "--probe", "import no_such_module",
                           "--preview", "never")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertEqual([(e["kind"], e["state"]) for e in self.log()[:2]],
                         [("rollback", "rolled_back"), ("rollback", "aborted")])
        self.assertEqual([e["state"] for e in entries[1:5]], ["committed"] * 4)

    def test_to_zero_and_to_a_middle_point(self):
        before = self.prepared()
        proc = self.venvtx("rollback", "--to", "2", "--no-baseline", "--probe", "import torch")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.log()[0]["state_after"], [e for e in self.log() if e["id"] == 2][0]["state_after"])
        proc = self.venvtx("rollback", "--to", "0")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))
        states = {e["state"] for e in self.log() if e["id"] <= 4}
        self.assertEqual(states, {"undone"})
        # Redo: the rollback --to 0 undone, and 1 and 2 committed again.
        self.assertEqual(self.venvtx("rollback", "--redo").returncode, 0)
        by_id = {e["id"]: e for e in self.log()}
        self.assertEqual([by_id[i]["state"] for i in (1, 2)], ["committed", "committed"])

    def test_one_older_transaction_alone(self):
        self.prepared()
        tree = tree_hash(self.venv)
        # tx 2 removed flash-attn, which nothing since touched.
        proc = self.venvtx("rollback", "2")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("flash-attn", self.installed())
        self.assertNotIn("sglang", self.installed())
        self.assertEqual(self.installed()["torch"], "2.12.0")
        # tx 3 removed nvshmem, which tx 4's install put back: refused, naming tx 4.
        tree = tree_hash(self.venv)
        proc = self.venvtx("rollback", "3")
        self.assertOneLineError(proc, 6)
        self.assertIn("tx 4 (install) changed", proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))

    def test_a_rollback_whose_newest_change_is_an_outside_reinstall_removes_it_again(self):
        original = tree_hash(self.venv)
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        tree = tree_hash(self.venv)
        self.pip_install("sglang")
        self.drop_holds()  # taking a distribution away needs no held file
        proc = self.venvtx("rollback")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("undoing entry 2 (outside)", proc.stdout)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        # tx 1 alone is refused now (the rollback changed its paths since); --to 0 undoes it.
        self.assertOneLineError(self.venvtx("rollback", "1"), 6)
        self.assertEqual(self.venvtx("rollback", "--to", "0").returncode, 0)
        self.assertTreeEqual(original, tree_hash(self.venv))

    def test_a_rollback_whose_newest_change_is_outside_and_not_held_is_refused_with_its_repair(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.drop_holds()
        self.pip("uninstall", "-q", "-y", "flash-attn")
        tree = tree_hash(self.venv)
        proc = self.venvtx("rollback")
        self.assertOneLineError(proc, 2)
        self.assertIn("the newest change, entry 2, was made outside venvtx (flash-attn 2.8.3 → ∅)", proc.stderr)
        self.assertIn("`venvtx install 'flash-attn==2.8.3'`", proc.stderr)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        # Undoing tx 1 by name is what the user can still ask.
        self.assertEqual(self.venvtx("rollback", "1").returncode, 0)
        self.assertIn("sglang", self.installed())
        self.assertNotIn("flash-attn", self.installed())

    def test_a_forced_rollback_over_an_outside_reinstall_says_what_really_changed(self):
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.pip_install("flash-attn")
        proc, tx = self.venvtx_json("rollback", "1", "--force")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # flash-attn was back already: the rollback brought back its own bytes, not a version.
        self.assertEqual([p for p in tx["packages"] if p["before"] != p["after"]], [], tx["packages"])
        self.assertIn("changed the venv outside venvtx (flash-attn ∅ → 2.8.3)", tx["details"]["forced"])
        self.assertEqual(self.installed()["flash-attn"], "2.8.3")

    def test_rollback_to_a_point_before_an_outside_change_not_held_refuses_before_acting(self):
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        self.drop_holds()
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        self.drop_holds()
        self.pip("uninstall", "-q", "-y", "flash-attn")
        self.assertEqual(self.venvtx("remove", "flashinfer-python").returncode, 0)
        tree = tree_hash(self.venv)
        for dry in ([], ["--dry-run"]):
            proc = self.venvtx_json("rollback", "--to", "1", *dry)[0]
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            error = json.loads(proc.stdout)["error"]
            self.assertEqual((error["kind"], error["details"]["outside"]), ("not_reachable", [3]), error)
            self.assertIn("it would leave flash-attn ∅ (entry 1 has 2.8.3)", error["message"])
            self.assertIn("entry 3 changed the venv outside venvtx (flash-attn 2.8.3 → ∅)", error["message"])
            self.assertIn("`venvtx install 'flash-attn==2.8.3'`", error["message"])
            self.assertIn("To reach it: `venvtx sync --to 1`", error["message"])
            self.assertTreeEqual(tree, tree_hash(self.venv))
        # --force undoes venvtx's own transactions and says N was not reached: not exit 0.
        proc, tx = self.venvtx_json("rollback", "--to", "1", "--force")
        self.assertEqual(proc.returncode, 6, proc.stderr)
        self.assertEqual(tx["details"]["undoes"], [4, 2])
        self.assertIn("entry 3 changed the venv outside venvtx (flash-attn 2.8.3 → ∅)", tx["not_at_target"])
        self.assertEqual(set(self.installed()) ^ set(self.freeze_names("1")), {"flash-attn"})

    def test_rollback_to_where_the_venv_already_is_succeeds_and_changes_nothing(self):
        # with no history at all, the venv is at entry 0: exit 0, and no store is made
        proc = self.venvtx("rollback", "--to", "0")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("already at entry 0", proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.venv, ".venvtx")))
        self.assertEqual(self.venvtx("rollback", "--to", "1").returncode, 2)
        self.assertEqual(self.venvtx("stamp").returncode, 0)
        tree = tree_hash(self.venv)
        document = json.loads(self.venvtx("--json", "rollback", "--to", "1").stdout)
        self.assertEqual((document.get("changed"), document.get("transaction")), (False, None), document)
        proc = self.venvtx("rollback", "--to", "0")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("already at entry 0", proc.stdout)
        self.assertTreeEqual(tree, tree_hash(self.venv))

    def test_the_last_change_outside_is_never_skipped_for_an_older_transaction(self):
        # issue 40: an unrelated venvtx change, then a plain pip uninstall of two cu13 wheels
        # (of files no state held: see test_outside_undo for the rollback that undoes it)
        self.assertEqual(self.venvtx("remove", "flash-attn").returncode, 0)
        self.drop_holds()
        versions = self.installed()
        self.pip("uninstall", "-q", "-y", "nvidia-cusparselt-cu13", "nvidia-nvshmem-cu13")
        tree = tree_hash(self.venv)
        proc = self.venvtx_json("rollback")[0]
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        error = json.loads(proc.stdout)["error"]
        self.assertEqual((error["kind"], error["details"]), ("outside_change", {"outside": [2], "tx": 1}), error)
        self.assertIn("`venvtx install 'nvidia-cusparselt-cu13==%s' 'nvidia-nvshmem-cu13==%s'`"
                      % (versions["nvidia-cusparselt-cu13"], versions["nvidia-nvshmem-cu13"]), error["message"])
        self.assertIn("To undo it: `venvtx sync --to 2^`, or", error["message"])
        self.assertTreeEqual(tree, tree_hash(self.venv))
        self.assertNotIn("flash-attn", self.installed())
        proc = self.venvtx_json("rollback", "2")[0]
        self.assertEqual(json.loads(proc.stdout)["error"]["kind"], "outside_change", proc.stdout)
        self.assertEqual(proc.returncode, 2)
        self.assertTreeEqual(tree, tree_hash(self.venv))
        # The command it suggests does undo it, and only it.
        proc = self.venvtx("sync", "--to", "2^", "--no-probe", "--", *self.wheel_args[1:], timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.installed(), versions)

    def freeze_names(self, point):
        proc, frozen = self.venvtx_json("freeze", "--at", point)
        return {d["normalized"] for d in frozen["dists"]}


class StoreBinding(HistoryCase):
    def test_a_store_used_with_another_venv_is_refused(self):
        store = os.path.join(self.tmp, "store")
        other = os.path.join(self.tmp, "other")
        subprocess.run(["cp", "-a", self.venv, other], check=True)
        self.assertEqual(self.venvtx("--store", store, "remove", "sglang").returncode, 0)
        other_tree = tree_hash(other)
        with open(os.path.join(store, "index.sqlite"), "rb") as f:
            index = f.read()
        for args in (["rollback"], ["remove", "flash-attn"], ["log"], ["stamp"], ["recover"]):
            proc = subprocess.run([VENVTX, "--venv", other, *args], capture_output=True, text=True,
                                  env=dict(self.env, VENVTX_STORE=store))
            self.assertOneLineError(proc, 2)
            self.assertIn("belongs to the venv " + os.path.realpath(self.venv), proc.stderr)
        self.assertTreeEqual(other_tree, tree_hash(other))
        with open(os.path.join(store, "index.sqlite"), "rb") as f:
            self.assertEqual(f.read(), index)

    def test_a_venv_moved_with_its_own_store_keeps_it(self):
        self.assertEqual(self.venvtx("remove", "sglang").returncode, 0)
        moved = os.path.join(self.tmp, "moved")
        os.rename(self.venv, moved)
        self.venv = moved
        proc = self.venvtx("log")
        self.assertEqual(proc.returncode, 0, proc.stderr)


if __name__ == "__main__":
    unittest.main()
