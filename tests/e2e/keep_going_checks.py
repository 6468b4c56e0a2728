"""Checking `remove --keep-going` results without venvtx: distributions uninstalled from a copy
by their RECORDs, and each verdict re-probed there."""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile


def uninstall(venv, names):
    """Deletes what each named distribution's RECORD lists, then the directories that leaves
    empty (an empty package directory would still import, as a namespace package): what
    `pip uninstall` does, without pip and without venvtx."""
    site = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))[0]
    wanted = {re.sub(r"[-_.]+", "-", n).lower() for n in names}
    dirs = set()
    for info in glob.glob(os.path.join(site, "*.dist-info")):
        with open(os.path.join(info, "METADATA"), encoding="utf-8") as f:
            name = next(l.split(":", 1)[1].strip() for l in f if l.startswith("Name:"))
        if re.sub(r"[-_.]+", "-", name).lower() not in wanted:
            continue
        wanted.discard(re.sub(r"[-_.]+", "-", name).lower())
        with open(os.path.join(info, "RECORD"), newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                path = os.path.normpath(os.path.join(site, row[0]))
                if os.path.lexists(path) and not os.path.isdir(path):
                    os.unlink(path)
                    dirs.add(os.path.dirname(path))
        dirs.add(info)
    if wanted:
        raise AssertionError("not installed in %s: %s" % (venv, sorted(wanted)))

    def only_empty_caches(path):
        with os.scandir(path) as entries:
            return all(entry.is_dir(follow_symlinks=False) and entry.name == "__pycache__"
                       and not os.listdir(entry.path) for entry in entries)

    stops = {site, os.path.join(venv, "share"), os.path.join(venv, "bin"), os.path.join(venv, "include")}
    for path in sorted(dirs, key=lambda d: -d.count(os.sep)):
        while (path.startswith(venv + os.sep) and path not in stops and os.path.isdir(path)
               and only_empty_caches(path)):
            shutil.rmtree(path)
            path = os.path.dirname(path)


def probe_with_removed(source_venv, names, code, env, shown_as, workdir):
    """The probe's result with `names` uninstalled, found without venvtx: a fresh copy of
    source_venv, those distributions uninstalled there by their RECORDs (uninstall above), then
    `python -c code` in it. Returns (exit status, last non-empty stderr line), with the copy's
    path in that line written as shown_as (the live venv's path, which venvtx's probes see)."""
    check = tempfile.mkdtemp(prefix="probe-check-", dir=workdir)
    try:
        copy = os.path.join(check, "venv")
        subprocess.run(["cp", "-a", source_venv, copy], check=True)
        uninstall(copy, names)
        proc = subprocess.run([os.path.join(copy, "bin", "python"), "-c", code], cwd=check,
                              env=dict(env, PYTHONDONTWRITEBYTECODE="1"), capture_output=True, text=True)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return proc.returncode, (lines[-1] if lines else "").replace(copy, shown_as)
    finally:
        shutil.rmtree(check, ignore_errors=True)


class KeepGoingChecks:
    """Checks of a `remove --keep-going` result (a VenvTestCase mixin): the sets, the trials, the
    probe count, and every kept reason and trial verdict against the probe itself, run without
    venvtx on a copy of the venv as it was before (`source`)."""

    def real_probe(self, source, names, code):
        cache = self.__dict__.setdefault("_real_probes", {})
        key = (source, code, frozenset(names))
        if key not in cache:
            cache[key] = probe_with_removed(source, sorted(names), code, self.env, self.venv, self.tmp)
        return cache[key]

    def keep_going_sets(self, tx):
        keep_going = tx["keep_going"]
        return [r["name"] for r in keep_going["removed"]], {k["name"]: k for k in keep_going["kept"]}

    def assertKeepGoing(self, tx, code, source, candidates, removed, kept, in_place=False, verify_trials=True):
        """removed, kept: the expected names; kept takes those the search kept after a probe (a
        distribution kept by --no-system-fallback is the caller's to check)."""
        keep_going = tx["keep_going"]
        detail = "(temp dir %s)\n%s" % (self.tmp, json.dumps(keep_going, indent=1)[:8000])
        got_removed, got_kept = self.keep_going_sets(tx)
        self.assertEqual(sorted(got_removed), sorted(removed), detail)
        self.assertEqual(len(got_removed), len(set(got_removed)), detail)
        probed_kept = {n: k for n, k in got_kept.items() if k["probe_error"] is not None}
        self.assertEqual(sorted(probed_kept), sorted(kept), detail)
        self.assertEqual(len(keep_going["kept"]), len(got_kept), detail)
        self.assertEqual(keep_going["previewed"], not in_place, detail)

        trials = keep_going["trials"]
        self.assertTrue(trials, "no trials, but the first trial is the whole set\n" + detail)
        self.assertEqual(trials[0]["removed"], sorted(candidates), "the first trial is not the whole set\n" + detail)
        for trial in trials:
            self.assertEqual(set(trial), {"removed", "passed", "error"}, detail)
            self.assertEqual(trial["removed"], sorted(set(trial["removed"])), detail)
            self.assertLessEqual(set(trial["removed"]), set(candidates), detail)
            self.assertEqual(trial["passed"], trial["error"] == "", "a trial's verdict and error disagree: %r" % trial)
        if removed:
            self.assertIn(sorted(removed), [t["removed"] for t in trials if t["passed"]],
                          "the removed set was never tried and seen passing\n" + detail)
        # One baseline, then one probe per trial (the chosen set's passing preview is reused); in
        # place, the chosen set is applied and probed once more (unless the whole set passed).
        extra = 1 if in_place and removed and not trials[0]["passed"] else 0
        self.assertEqual(keep_going["probes"], 1 + len(trials) + extra, detail)

        for name, entry in probed_kept.items():
            self.assertEqual(set(entry), {"name", "reason", "probe_error", "removed_with"}, detail)
            others = entry["removed_with"]
            self.assertNotIn(name, others, detail)
            self.assertEqual(others, sorted(others), detail)
            self.assertTrue(entry["probe_error"], detail)
            together = " together with " + ", ".join(others) if others else ""
            self.assertEqual(entry["reason"], "with it removed%s, the probe failed: %s" % (together, entry["probe_error"]))
            self.assertIn({"removed": sorted(others + [name]), "passed": False, "error": entry["probe_error"]}, trials,
                          "kept %s: its reason is no trial's result\n%s" % (name, detail))
            rc, last = self.real_probe(source, others + [name], code)
            self.assertNotEqual(rc, 0, "kept %s: without %s the probe passes when run by hand" % (name, others + [name]))
            self.assertEqual(last, entry["probe_error"], "kept %s: the probe run by hand without %s" % (name, others + [name]))
        for name, entry in probed_kept.items():
            # A reason is a reason when what it removed besides this one was removed: else
            # removing this one with the chosen set was never tried.
            self.assertLessEqual(set(entry["removed_with"]), set(got_removed),
                                 "kept %s: its reason removed %s, which were not removed; removing it with the "
                                 "chosen set %s was never tried\n%s" % (name, sorted(set(entry["removed_with"]) - set(got_removed)),
                                                                         sorted(got_removed), detail))
        if verify_trials:
            for trial in trials:
                rc, last = self.real_probe(source, trial["removed"], code)
                self.assertEqual(rc == 0, trial["passed"], "trial %r; by hand: rc %d, %s" % (trial, rc, last))
                if not trial["passed"]:
                    self.assertEqual(last, trial["error"], "trial %r, by hand" % (trial,))
        rc, last = self.real_probe(source, got_removed, code)
        self.assertEqual(rc, 0, "the removed set fails the probe run by hand: %s" % last)
        live = self.python(code)
        self.assertEqual(live.returncode, 0, "the probe fails in the live venv after: %s" % live.stderr[-2000:])

    def assertKeepGoingLines(self, stdout, removed, kept):
        """One `  removed NAME[: ...]` or `  kept NAME: ...` line per distribution."""
        lines = [l for l in stdout.splitlines() if l.startswith("  removed ") or l.startswith("  kept ")]
        named = [re.match(r"  (removed|kept) ([^:\s]+)", l).groups() for l in lines]
        self.assertEqual(sorted(n for _, n in named), sorted(list(removed) + list(kept)), stdout)
        for line, (verb, name) in zip(lines, named):
            self.assertEqual(verb, "removed" if name in removed else "kept", line)
            if verb == "removed":
                self.assertTrue(line == "  removed " + name or
                                line.startswith("  removed %s: its libraries now come from the system: " % name), line)
            else:
                self.assertTrue(line.startswith("  kept %s: " % name), line)
        return dict((n, l) for l, (_, n) in zip(lines, named))
