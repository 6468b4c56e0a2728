"""`remove --keep-going` (issue 11, part 2) on synthetic dependency shapes: a venv of small
wheels made here (pure Python, and one real ELF library with a system copy), installed by real
pip. For every shape: the exact removed and kept sets, the probe passing in the live venv after,
and every kept reason and trial verdict checked against the probe run by hand (the distributions
uninstalled by their RECORDs on a copy of the venv, then `python -c`), not against venvtx."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from keep_going_checks import KeepGoingChecks
from support import FIXTURE, VenvTestCase, scratch, tree_hash

sys.path.insert(0, os.path.dirname(FIXTURE))
from make_story_venv import TARGET_INFO, write_wheel  # noqa: E402  (the story's wheel writer)

INDEPENDENT = ["alpha", "beta", "gamma", "delta"]
ALTERNATIVE = "try:\n    import x1\nexcept ImportError:\n    import x2\n"
MANY = ["n%02d" % i for i in range(1, 10)]  # with x1 and x2: 11 interacting distributions

FOO_C = "int venvtx_foo(void) { return FOO_VALUE; }\n"
STUB_C = "extern int venvtx_foo(void);\nint usesfoo_value(void) { return venvtx_foo(); }\n"
USESFOO = ("import ctypes, os\n"
           "_stub = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_stub.so'))\n\n\n"
           "def value():\n"
           "    return _stub.usesfoo_value()\n")

_template = None


def synthetic_template():
    """Builds once per process: ROOT/venv (python -m venv, then real pip from wheels made here),
    ROOT/system/libfoo.so.1 (the "system" copy: venvtx_foo() returns 2, the venv's returns 1)
    and ROOT/ld.so.cache.txt (an `ldconfig -p` listing naming it)."""
    global _template
    if _template is not None:
        return _template
    root = tempfile.mkdtemp(prefix="venvtx-e2e-keepgoing-template-")
    atexit.register(shutil.rmtree, root, True)
    wheels, build, system = (os.path.join(root, d) for d in ("wheels", "build", "system"))
    for d in (wheels, build, system):
        os.mkdir(d)

    def pure(name, text=None, requires=()):
        write_wheel(wheels, name, "1.0", "py3-none-any", {name + "/__init__.py": text or "VALUE = %r\n" % name},
                    requires=requires, top_level=[name])

    for name in INDEPENDENT + ["x1", "x2", "lower"] + MANY:
        pure(name)
    pure("upper", "from lower import VALUE as LOWER\n", requires=["lower"])

    with open(os.path.join(build, "foo.c"), "w") as f:
        f.write(FOO_C)
    with open(os.path.join(build, "stub.c"), "w") as f:
        f.write(STUB_C)
    for out, value in ((os.path.join(build, "libfoo.so.1"), 1), (os.path.join(system, "libfoo.so.1"), 2)):
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", out, os.path.join(build, "foo.c"),
                        "-DFOO_VALUE=%d" % value, "-Wl,-soname,libfoo.so.1"], check=True)
    # The consumer: DT_NEEDED libfoo.so.1, found through DT_RPATH in the venv (then, with that
    # gone, through LD_LIBRARY_PATH: the "system" copy).
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", os.path.join(build, "_stub.so"),
                    os.path.join(build, "stub.c"), "-L" + build, "-Wl,--no-as-needed", "-l:libfoo.so.1",
                    "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../foo_lib/lib"], check=True)
    info = json.loads(subprocess.run([sys.executable, "-c", TARGET_INFO], check=True, capture_output=True,
                                     text=True).stdout)
    tag = "%s-%s-%s" % (info["abi"], info["abi"], info["plat"])
    write_wheel(wheels, "foo-lib", "1.0", tag, {"foo_lib/__init__.py": "",
                                                "foo_lib/lib/libfoo.so.1": Path(build, "libfoo.so.1")},
                top_level=["foo_lib"])
    write_wheel(wheels, "usesfoo", "1.0", tag, {"usesfoo/__init__.py": USESFOO,
                                                "usesfoo/_stub.so": Path(build, "_stub.so")},
                requires=["foo-lib"], top_level=["usesfoo"])
    with open(os.path.join(root, "ld.so.cache.txt"), "w") as f:
        f.write("1 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibfoo.so.1 (libc6,x86-64) => %s\n" % os.path.join(system, "libfoo.so.1"))

    venv = os.path.join(root, "venv")
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
    env.pop("VIRTUAL_ENV", None)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, env=env)
    names = INDEPENDENT + ["x1", "x2", "lower", "upper", "foo-lib", "usesfoo"] + MANY
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--find-links", wheels,
                    "--disable-pip-version-check", "-q", *names], check=True, env=env)
    # pip leaves too, by its own hand: smaller copies (the checks here uninstall by RECORD).
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "uninstall", "-y", "-q",
                    "--disable-pip-version-check", "pip", "setuptools"], check=True, env=env)
    _template = root
    return root


class KeepGoingCase(KeepGoingChecks, VenvTestCase):
    """A copy of the synthetic venv (not the story venv) for each test."""

    def setUp(self):
        self.template = synthetic_template()
        self.source = os.path.join(self.template, "venv")
        self.tmp, self.in_memory = scratch("venvtx-e2e-%s-" % self._testMethodName)
        self.venv = os.path.join(self.tmp, "venv")
        subprocess.run(["cp", "-a", self.source, self.venv], check=True)
        self.site = [os.path.join(self.venv, "lib", d, "site-packages")
                     for d in os.listdir(os.path.join(self.venv, "lib")) if d.startswith("python")][0]
        self.env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        for name in ("VIRTUAL_ENV", "VENVTX_FAKE_GPUS", "LD_LIBRARY_PATH", "VENVTX_LD_CACHE"):
            self.env.pop(name, None)
        # This machine's loader cache is not the test's: nothing here is a system copy unless said.
        self.no_cache = os.path.join(self.tmp, "empty-ld.so.cache.txt")
        with open(self.no_cache, "w") as f:
            f.write("0 libs found in cache `/etc/ld.so.cache'\n")
        self.env["VENVTX_LD_CACHE"] = self.no_cache

    def said(self, proc):
        return "exit %d\nstdout=%s\nstderr=%s\n(temp dir %s)" % (proc.returncode, proc.stdout[-4000:],
                                                               proc.stderr[-3000:], self.tmp)

    def keep_going(self, names, code, *extra, json_out=True, code_expected=0):
        args = ["remove", *names, "--keep-going", "--probe", code, *extra]
        if json_out:
            proc, tx = self.venvtx_json(*args)
        else:
            proc, tx = self.venvtx(*args), None
        self.assertEqual(proc.returncode, code_expected, self.said(proc))
        return proc, tx

    def log_states(self):
        proc, log = self.venvtx_json("log")
        self.assertEqual(proc.returncode, 0, self.said(proc))
        return log

    def assertCommitted(self, tx, removed):
        self.assertEqual(tx["state"], "committed", json.dumps(tx, indent=1)[:3000])
        self.assertEqual(sorted(p["name"] for p in tx["packages"]), sorted(removed))
        for name in removed:
            self.assertNotEqual(self.python("import %s" % name.replace("-", "_")).returncode, 0, name)


class Shapes(KeepGoingCase):
    def test_one_needed(self):
        code = "import alpha"
        before = tree_hash(self.venv)
        proc, tx = self.keep_going(["alpha", "beta", "gamma"], code)
        self.assertKeepGoing(tx, code, self.source, ["alpha", "beta", "gamma"], ["beta", "gamma"], ["alpha"])
        self.assertCommitted(tx, ["beta", "gamma"])
        kept = self.keep_going_sets(tx)[1]["alpha"]
        self.assertEqual(kept["removed_with"], [])
        self.assertEqual(kept["probe_error"], "ModuleNotFoundError: No module named 'alpha'")
        self.assertTrue(tx["keep_going"]["exact"])
        # The whole set, the three singles, then the two survivors together: the last one passed.
        trials = [t["removed"] for t in tx["keep_going"]["trials"]]
        self.assertEqual((trials[0], sorted(trials[1:4]), trials[4:]),
                         (["alpha", "beta", "gamma"], [["alpha"], ["beta"], ["gamma"]], [["beta", "gamma"]]))
        # One transaction: the previewed whole set is its first trial, not an entry of its own.
        self.assertEqual([t["state"] for t in self.log_states()], ["committed"])
        self.assertEqual(tx["keep_going"]["attempts"], [])
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_one_needed_human(self):
        proc, _ = self.keep_going(["alpha", "beta", "gamma"], "import alpha", json_out=False)
        self.assertIn("keep-going: 6 probes run in private views, up to 4 at a time\n", proc.stdout)
        lines = self.assertKeepGoingLines(proc.stdout, ["beta", "gamma"], ["alpha"])
        self.assertEqual(lines["alpha"], "  kept alpha: with it removed, the probe failed: "
                                         "ModuleNotFoundError: No module named 'alpha'")

    def test_two_needed_together(self):
        code = "import alpha, beta"
        proc, tx = self.keep_going(["alpha", "beta", "gamma"], code)
        self.assertKeepGoing(tx, code, self.source, ["alpha", "beta", "gamma"], ["gamma"], ["alpha", "beta"])
        self.assertCommitted(tx, ["gamma"])
        kept = self.keep_going_sets(tx)[1]
        self.assertEqual((kept["alpha"]["removed_with"], kept["beta"]["removed_with"]), ([], []))

    def test_needed_only_through_another(self):
        code = "import upper"
        proc, tx = self.keep_going(["upper", "lower", "gamma"], code)
        self.assertKeepGoing(tx, code, self.source, ["upper", "lower", "gamma"], ["gamma"], ["lower", "upper"])
        self.assertCommitted(tx, ["gamma"])
        kept = self.keep_going_sets(tx)[1]
        self.assertEqual(kept["lower"]["probe_error"], "ModuleNotFoundError: No module named 'lower'")
        self.assertEqual(kept["upper"]["probe_error"], "ModuleNotFoundError: No module named 'upper'")

    def test_two_alternatives(self):
        names = ["x1", "x2", "gamma", "delta"]
        proc, tx = self.keep_going(names, ALTERNATIVE)
        removed, kept = self.keep_going_sets(tx)
        self.assertEqual(len(set(removed) & {"x1", "x2"}), 1, json.dumps(tx["keep_going"], indent=1))
        gone = (set(removed) & {"x1", "x2"}).pop()
        stays = ({"x1", "x2"} - {gone}).pop()
        self.assertKeepGoing(tx, ALTERNATIVE, self.source, names, ["delta", "gamma", gone], [stays])
        self.assertCommitted(tx, ["delta", "gamma", gone])
        self.assertIn(gone, kept[stays]["removed_with"])
        self.assertIn(" together with ", kept[stays]["reason"])
        self.assertRegex(kept[stays]["reason"], r"together with [^:]*\b%s\b" % gone)
        self.assertTrue(tx["keep_going"]["exact"])

    def test_nothing_removable(self):
        code = "import alpha, beta, gamma"
        before = tree_hash(self.venv)
        proc, tx = self.keep_going(["alpha", "beta", "gamma"], code, code_expected=3)
        self.assertKeepGoing(tx, code, self.source, ["alpha", "beta", "gamma"], [], ["alpha", "beta", "gamma"])
        self.assertTreeEqual(before, tree_hash(self.venv))
        # The document is the aborted whole-set transaction's; each kept by its own single.
        self.assertEqual(tx["state"], "aborted")
        self.assertEqual(sorted(p["name"] for p in tx["packages"]), ["alpha", "beta", "gamma"])
        for name, entry in self.keep_going_sets(tx)[1].items():
            self.assertEqual(entry["removed_with"], [], name)
            self.assertEqual(entry["probe_error"], "ModuleNotFoundError: No module named '%s'" % name)
        self.assertEqual([t["state"] for t in self.log_states()], ["aborted"])
        human = self.venvtx("remove", "alpha", "beta", "gamma", "--keep-going", "--probe", code)
        self.assertEqual(human.returncode, 3, self.said(human))
        self.assertKeepGoingLines(human.stdout, [], ["alpha", "beta", "gamma"])
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_whole_set_passes(self):
        """Nothing to search: committed at once, and the one trial is the whole set."""
        code = "import alpha"
        proc, tx = self.keep_going(["beta", "gamma"], code)
        self.assertCommitted(tx, ["beta", "gamma"])
        self.assertEqual(tx["keep_going"]["kept"], [])
        self.assertEqual(tx["keep_going"]["trials"], [{"removed": ["beta", "gamma"], "passed": True, "error": ""}],
                         "spec: the first trial is the whole set\n" + json.dumps(tx["keep_going"], indent=1))
        self.assertKeepGoing(tx, code, self.source, ["beta", "gamma"], ["beta", "gamma"], [])
        self.assertEqual([t["state"] for t in self.log_states()], ["committed"])


class InPlace(KeepGoingCase):
    def test_preview_never_one_needed(self):
        code = "import alpha"
        before = tree_hash(self.venv)
        proc, tx = self.keep_going(["alpha", "beta", "gamma"], code, "--preview", "never")
        self.assertKeepGoing(tx, code, self.source, ["alpha", "beta", "gamma"], ["beta", "gamma"], ["alpha"],
                             in_place=True)
        self.assertCommitted(tx, ["beta", "gamma"])
        trials = tx["keep_going"]["trials"]
        log = list(reversed(self.log_states()))  # oldest first
        self.assertEqual(len(log), len(trials) + 1, json.dumps(log, indent=1)[:4000])
        # The whole set, tried in place and restored.
        self.assertEqual(log[0]["state"], "rolled_back")
        self.assertEqual(sorted(p["name"] for p in log[0]["packages"]), trials[0]["removed"])
        self.assertIn(trials[0]["error"], log[0]["message"])
        # Each later trial: applied, probed and restored, saying so.
        for record, trial in zip(log[1:], trials[1:]):
            self.assertEqual(record["state"], "rolled_back", record)
            self.assertEqual(sorted(p["name"] for p in record["packages"]), trial["removed"], record)
            verdict = "the probe passed" if trial["passed"] else "the probe failed: " + trial["error"]
            self.assertEqual(record["message"], "keep-going trial: " + verdict, record)
        self.assertEqual(log[-1]["state"], "committed")
        self.assertEqual(log[-1]["id"], tx["id"])
        # Every trial was restored exactly: undoing the one committed removal gives the venv back.
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertTreeEqual(before, tree_hash(self.venv))

    def test_preview_never_human(self):
        proc, _ = self.keep_going(["alpha", "beta", "gamma"], "import alpha", "--preview", "never", json_out=False)
        self.assertIn("keep-going: 7 probes run in place, one at a time\n", proc.stdout)
        self.assertKeepGoingLines(proc.stdout, ["beta", "gamma"], ["alpha"])


# Logs each run: its start, end and which of alpha, beta, gamma it cannot import.
TIMED = ("import importlib.util, time\n"
         "missing = [n for n in ('alpha', 'beta', 'gamma') if importlib.util.find_spec(n) is None]\n"
         "start = time.time()\n"
         "time.sleep(0.6)\n"
         "with open(%r, 'a') as f:\n"
         "    f.write('%%f %%f %%s\\n' %% (start, time.time(), ','.join(missing)))\n"
         "import alpha\n")


class Jobs(KeepGoingCase):
    def singles_overlap(self, log):
        """The most single-distribution trials that ran at one time."""
        runs = []
        with open(log) as f:
            for line in f:
                start, end, missing = (line.rstrip("\n").split(" ", 2) + [""])[:3]
                if missing and "," not in missing:
                    runs.append((float(start), float(end)))
        self.assertEqual(len(runs), 3, "expected three singles in %s" % log)
        return max(sum(1 for s, e in runs if s <= start < e) for start, _ in runs)

    def test_jobs_1_and_default_agree(self):
        names = ["alpha", "beta", "gamma"]
        log_default = os.path.join(self.tmp, "default.log")
        code = TIMED % log_default
        proc, tx = self.keep_going(names, code)
        self.assertGreaterEqual(self.singles_overlap(log_default), 2, "the singles did not run side by side")
        self.assertKeepGoing(tx, code, self.source, names, ["beta", "gamma"], ["alpha"], verify_trials=False)

        self.venv = os.path.join(self.tmp, "venv-jobs1")
        subprocess.run(["cp", "-a", self.source, self.venv], check=True)
        log_one = os.path.join(self.tmp, "jobs1.log")
        proc = self.keep_going(names, TIMED % log_one, "--jobs", "1", json_out=False)[0]
        overlap = self.singles_overlap(log_one)
        self.assertIn(" in private views, up to 1 at a time\n", proc.stdout)
        lines = self.assertKeepGoingLines(proc.stdout, ["beta", "gamma"], ["alpha"])
        self.assertEqual(lines["alpha"], "  kept alpha: " + self.keep_going_sets(tx)[1]["alpha"]["reason"])
        self.assertEqual(self.python(code).returncode, 0)
        self.assertEqual(overlap, 1, "--jobs 1 ran %d singles side by side (%s)" % (overlap, log_one))

    def test_jobs_1_alternatives(self):
        names = ["x1", "x2", "gamma", "delta"]
        results = []
        for jobs in ([], ["--jobs", "1"]):
            self.venv = os.path.join(self.tmp, "venv%s" % "".join(jobs))
            subprocess.run(["cp", "-a", self.source, self.venv], check=True)
            tx = self.keep_going(names, ALTERNATIVE, *jobs)[1]
            removed, kept = self.keep_going_sets(tx)
            self.assertKeepGoing(tx, ALTERNATIVE, self.source, names, removed, list(kept), verify_trials=False)
            results.append((sorted(removed), sorted(kept)))
        self.assertEqual(results[0], results[1])
        self.assertEqual(len(results[0][1]), 1, results)


class Greedy(KeepGoingCase):
    def test_more_than_eight_interacting(self):
        """11 distributions that each pass alone but not all together (x1 or x2 is needed): past
        8 the search is greedy and says so; what it removes passes, and x1 and x2 do not both go.
        Greedy need not find the largest set, but the one it finds should be maximal: no kept
        distribution could have been removed with it (else its kept reason is no reason)."""
        names = MANY + ["x1", "x2"]
        proc, tx = self.keep_going(["n0*", "x1", "x2"], ALTERNATIVE)
        self.assertFalse(tx["keep_going"]["exact"])
        removed, kept = self.keep_going_sets(tx)
        self.assertNotEqual({"x1", "x2"} & set(removed), {"x1", "x2"})
        self.assertEqual(sorted(removed + list(kept)), sorted(names))
        self.assertCommitted(tx, removed)
        rc, last = self.real_probe(self.source, removed, ALTERNATIVE)
        self.assertEqual(rc, 0, last)
        for name in sorted(kept):
            rc, _ = self.real_probe(self.source, removed + [name], ALTERNATIVE)
            self.assertNotEqual(rc, 0, "greedy removed %s and kept %s, though removing %s as well passes the probe "
                                       "(run by hand); its kept reason: %s"
                                % (removed, sorted(kept), name, kept[name]["reason"]))
        self.assertKeepGoing(tx, ALTERNATIVE, self.source, names, removed, list(kept), verify_trials=False)

    def test_more_than_eight_interacting_human(self):
        proc = self.keep_going(["n0*", "x1", "x2"], ALTERNATIVE, json_out=False)[0]
        self.assertRegex(proc.stdout, r"keep-going: \d+ probes? run in private views, up to 4 at a time "
                                      r"\(more than 8 interacting distributions: searched greedily\)\n")


class SystemFallback(KeepGoingCase):
    """foo-lib ships libfoo.so.1, which usesfoo's _stub.so needs (DT_RPATH into foo_lib/lib); a
    "system" copy lies in ROOT/system: on LD_LIBRARY_PATH for the loader (the probe inherits
    venvtx's environment) and in the loader-cache listing venvtx reads (VENVTX_LD_CACHE: its
    impact analysis does not read LD_LIBRARY_PATH, and /etc is not the test's to change)."""
    CODE = "import usesfoo, alpha\nusesfoo.value()"

    def setUp(self):
        super().setUp()
        self.system_lib = os.path.join(self.template, "system", "libfoo.so.1")
        self.env["VENVTX_LD_CACHE"] = os.path.join(self.template, "ld.so.cache.txt")
        self.env["LD_LIBRARY_PATH"] = os.path.dirname(self.system_lib)
        self.copy_line = "libfoo.so.1 -> " + self.system_lib

    def foo_value(self, env):
        return subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", "import usesfoo; print(usesfoo.value())"],
                              capture_output=True, text=True, env=env)

    def test_removed_with_its_system_copy(self):
        names = ["foo-lib", "alpha", "gamma"]
        self.assertEqual(self.foo_value(self.env).stdout.strip(), "1")  # the venv's copy first (DT_RPATH)
        proc, tx = self.keep_going(names, self.CODE)
        self.assertKeepGoing(tx, self.CODE, self.source, names, ["foo-lib", "gamma"], ["alpha"])
        self.assertCommitted(tx, ["foo-lib", "gamma"])
        removed = {r["name"]: r["system_copies"] for r in tx["keep_going"]["removed"]}
        self.assertEqual(removed, {"foo-lib": [self.copy_line], "gamma": []})
        self.assertFalse(os.path.exists(os.path.join(self.site, "foo_lib")))
        # The live venv now really loads the system copy, and only finds it through it.
        self.assertEqual(self.foo_value(self.env).stdout.strip(), "2")
        without = dict(self.env)
        without.pop("LD_LIBRARY_PATH")
        failed = self.foo_value(without)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("libfoo.so.1: cannot open shared object file", failed.stderr)

    def test_removed_with_its_system_copy_human(self):
        proc = self.keep_going(["foo-lib", "alpha", "gamma"], self.CODE, json_out=False)[0]
        lines = self.assertKeepGoingLines(proc.stdout, ["foo-lib", "gamma"], ["alpha"])
        self.assertEqual(lines["foo-lib"], "  removed foo-lib: its libraries now come from the system: " + self.copy_line)
        self.assertEqual(lines["gamma"], "  removed gamma")

    def test_no_system_fallback_keeps_it_without_a_probe(self):
        names = ["foo-lib", "alpha", "gamma"]
        proc, tx = self.keep_going(names, self.CODE, "--no-system-fallback")
        # foo-lib is no candidate: the search is over alpha and gamma only.
        self.assertKeepGoing(tx, self.CODE, self.source, ["alpha", "gamma"], ["gamma"], ["alpha"])
        self.assertCommitted(tx, ["gamma"])
        kept = self.keep_going_sets(tx)[1]
        reason = "its %s would come from the system (--no-system-fallback)" % self.copy_line
        self.assertEqual(kept["foo-lib"]["reason"], reason)
        self.assertIsNone(kept["foo-lib"]["probe_error"])
        for trial in tx["keep_going"]["trials"]:
            self.assertNotIn("foo-lib", trial["removed"])
        self.assertEqual(self.foo_value(self.env).stdout.strip(), "1")
        human = self.venvtx("rollback")
        self.assertEqual(human.returncode, 0)
        human = self.keep_going(names, self.CODE, "--no-system-fallback", json_out=False)[0]
        lines = self.assertKeepGoingLines(human.stdout, ["gamma"], ["alpha", "foo-lib"])
        self.assertEqual(lines["foo-lib"], "  kept foo-lib: " + reason)
        # Every kept entry has the same fields (spec: name, reason, probe_error, removed_with).
        self.assertEqual(set(kept["foo-lib"]), {"name", "reason", "probe_error", "removed_with"}, kept["foo-lib"])
        self.assertEqual(kept["foo-lib"]["removed_with"], [])

    def test_no_system_fallback_with_nothing_else(self):
        before = tree_hash(self.venv)
        proc = self.venvtx("remove", "foo-lib", "--keep-going", "--probe", self.CODE, "--no-system-fallback")
        self.assertOneLineError(proc, 2)
        self.assertIn("nothing was changed", proc.stderr)
        self.assertTreeEqual(before, tree_hash(self.venv))


if __name__ == "__main__":
    unittest.main()
