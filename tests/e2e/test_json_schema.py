"""Every command and error path, in text and under --json: each document is validated whole
against docs/json.schema.json (a key missing or unknown fails), no command prints null, and the
text run exits as the JSON run did. The validator is shown to fail on a broken document."""
import copy
import fcntl
import json
import os
import shutil
import subprocess
import sys
import unittest

import jsonschema

from support import REPO, VENVTX, VenvTestCase

SCHEMA_FILE = os.path.join(REPO, "docs", "json.schema.json")


def load_schema():
    with open(SCHEMA_FILE) as f:
        return json.load(f)


def validator_for(schema, name):
    """Validates against $defs/<name>, with the whole schema as the root its $refs resolve in."""
    wrapped = dict(schema)
    wrapped.pop("oneOf")
    wrapped = {**wrapped, "$ref": "#/$defs/" + name}
    return jsonschema.Draft202012Validator(wrapped)


class JsonSchema(VenvTestCase):
    def setUp(self):
        super().setUp()
        self.use_story_wheels()
        self.schema = load_schema()
        jsonschema.Draft202012Validator.check_schema(self.schema)
        self.seen = {}  # definition -> how many documents were checked against it

    def venvtx(self, *args, env=None, cwd=None, timeout=120):
        """As VenvTestCase.venvtx, but a run that names its own --venv gets no other."""
        if "--venv" not in args:
            return super().venvtx(*args, env=env, cwd=cwd, timeout=timeout)
        return subprocess.run([VENVTX, *args], capture_output=True, text=True, env=env or self.env,
                              cwd=cwd or self.tmp, timeout=timeout)

    def both(self, definition, code, *args, env=None):
        """Runs venvtx ARGS under --json and as text; returns the document."""
        proc = self.venvtx("--json", *args, env=env)
        self.assertEqual(proc.returncode, code, "%s: %s%s" % (args, proc.stdout, proc.stderr))
        self.assertNotEqual(proc.stdout.strip(), "null", args)
        document = json.loads(proc.stdout)
        errors = sorted(validator_for(self.schema, definition).iter_errors(document), key=lambda e: list(e.path))
        self.assertEqual([], ["%s at %s" % (e.message, list(e.path)) for e in errors],
                         "%s: %s" % (args, json.dumps(document, indent=1)[:3000]))
        self.seen[definition] = self.seen.get(definition, 0) + 1
        return document

    def text(self, definition, code, *args, env=None):
        proc = self.venvtx(*args, env=env)
        self.assertEqual(proc.returncode, code, "%s: %s%s" % (args, proc.stdout, proc.stderr))
        self.assertNotIn("null", proc.stdout.split(), args)
        if definition == "error":
            self.assertOneLineError(proc, code)
        return proc

    def check(self, definition, code, *args, env=None, mutates=False):
        """Text first where the command changes nothing, else JSON only (each run would mutate)."""
        if not mutates:
            self.text(definition, code, *args, env=env)
        return self.both(definition, code, *args, env=env)

    def error(self, kind, code, *args, env=None):
        document = self.check("error", code, *args, env=env)
        self.assertEqual((document["error"]["kind"], document["error"]["exit_code"]), (kind, code), args)
        return document["error"]

    def test_every_command_and_error(self):
        w = self.wheel_args
        # Before any history.
        self.check("version", 0, "--version")
        self.check("log", 0, "log")
        self.check("config", 0, "config")
        self.check("recover", 0, "recover")
        self.check("mutation", 0, "remove", "nvidia-*-cu13", "--dry-run")
        self.check("mutation", 0, "install", "--installer", "pip", "torch==2.12.0", "--dry-run", *w)
        self.check("mutation", 0, "run", "--dry-run", "--", "true")
        self.check("probe", 0, "probe", "--probe", "import torch")
        probe = self.check("probe", 3, "probe", "--probe", "import sys; sys.exit(7)")
        self.assertEqual((probe["exit_code"], probe["passed"]), (7, False))
        self.error("no_match", 2, "remove", "no-such-thing", "--strict")
        self.assertEqual(self.check("mutation", 0, "remove", "no-such-thing")["changed"], False)
        self.error("usage", 2, "remove", "sglang", "--frobnicate")
        self.error("usage", 2, "frobnicate")
        self.error("not_a_venv", 2, "--venv", self.tmp, "log")
        self.error("nothing_to_undo", 2, "rollback")
        self.error("prompt", 2, "run", "--", "pip", "uninstall", "flash-attn")
        broken = self.error("unprobed_breakage", 2, "remove", "nvidia-cusparselt-cu13")
        self.assertEqual((broken["details"]["libraries"], broken["details"]["probe"]), (["libcusparseLt.so.0"], "import torch"))
        self.error("installer_failed", 2, "install", "--installer", "pip", "no-such-dist", "--dry-run", *w)
        # A history: a stamp, a removal, an install, a run that changes nothing.
        self.check("stamp", 0, "stamp", "--comment", "before", mutates=True)
        removed = self.check("mutation", 0, "remove", "flash-attn", "--probe", "import torch", mutates=True)
        self.assertTrue(removed["changed"])
        self.assertEqual(removed["transaction"]["plan"]["kind"], "remove")
        self.check("mutation", 0, "install", "--installer", "pip", "--no-probe", "torch==2.12.0", *w, mutates=True)
        nothing = self.check("mutation", 0, "run", "--", "true", mutates=True)
        self.assertEqual((nothing["changed"], nothing["transaction"]), (False, None))
        # torch 2.12.0 no longer imports: the probe fails before and after a removal (exit 4), and
        # a rollback with the probe is the repair.
        still = self.check("mutation", 4, "remove", "sglang", "--probe", "import torch", mutates=True)
        self.assertEqual(still["transaction"]["repair"], "still_failing")
        what_if = self.check("mutation", 0, "rollback", "--dry-run")
        self.assertEqual(what_if["plan"]["undoes"], [3])
        fixed = self.check("mutation", 0, "rollback", "--probe", "import torch", mutates=True)
        self.assertEqual(fixed["transaction"]["repair"], "fixed")
        failed = self.check("mutation", 3, "remove", "nvidia-*-cu13", "--probe", "import torch", mutates=True)
        self.assertEqual(failed["transaction"]["probe"]["passed"], False)
        self.check("mutation", 3, "remove", "nvidia-*-cu13", "--dry-run", "--probe", "import torch")
        self.check("mutation", 0, "rollback", "--redo", "--dry-run")
        self.check("mutation", 0, "rollback", "--to", "0", "--dry-run")
        self.check("mutation", 0, "remove", "nvidia-*", "--keep-going", "--probe", "import torch", mutates=True)
        # Queries.
        log = self.check("log", 0, "log")["transactions"]
        self.check("show", 0, "show")
        self.check("show", 0, "show", "2")
        self.check("status", 0, "status")
        self.check("status", 0, "status", "--files")
        self.check("diff", 0, "diff", "1")
        self.check("diff", 0, "diff", "1", "now", "--libs", "--files")
        self.check("freeze", 0, "freeze")
        self.check("freeze", 0, "freeze", "--at", "1")
        synced = self.check("mutation", 0, "sync", "--to", "1", "--dry-run", "--no-probe", *w)
        self.assertTrue(synced["dry_run"])
        self.assertEqual(self.check("mutation", 0, "sync", "--to", "now")["changed"], False)
        self.check("verify", 0, "verify")
        self.check("why", 0, "why", "libcudnn.so.9")
        self.check("why", 0, "why", "torch")
        self.check("gc", 0, "gc", "--dry-run")
        self.check("config", 0, "config", "probe", "import torch", mutates=True)
        self.check("config", 0, "config", "gpus")
        self.check("guard", 0, "guard", "on", mutates=True)
        self.check("guard", 0, "guard")
        self.check("guard", 0, "guard", "off", mutates=True)
        self.check("recover", 0, "recover")
        record = os.path.join(self.tmp, "run.json")
        self.assertEqual(self.venvtx("exec", "--record-to", record, "--", "true").returncode, 0)
        with open(record) as f:
            document = json.load(f)
        errors = [e.message for e in validator_for(self.schema, "exec_record").iter_errors(document)]
        self.assertEqual(errors, [], document)
        self.seen["exec_record"] = self.seen.get("exec_record", 0) + 1
        # Errors with a history.
        self.error("not_found", 2, "show", "999")
        self.error("not_found", 2, "rollback", "1")  # entry 1 is a stamp
        aborted = next(tx["id"] for tx in log if tx["state"] in ("aborted", "rolled_back"))
        self.error("not_undoable", 2, "rollback", str(aborted))
        self.error("usage", 2, "config", "frobnicate", "1")
        self.error("usage", 2, "diff", "nowhere")
        self.error("usage", 2, "sync", "--to", "nowhere")
        os.makedirs(os.path.join(self.site, "flash_attn"), exist_ok=True)  # where tx 2 removed it
        with open(os.path.join(self.site, "flash_attn", "__init__.py"), "w") as f:
            f.write("# someone else's\n")
        refused = self.check("mutation", 6, "rollback", "--to", "0", "--dry-run", "--no-probe")
        self.assertIn("flash_attn/__init__.py", refused["plan"]["refused"]["message"])
        drift = self.error("drift", 6, "rollback", "--to", "0", "--no-probe")
        self.assertIn("lib", drift["details"]["paths"][0]["path"])
        self.assertIn("tx", drift["details"])
        elsewhere = os.path.join(self.tmp, "other")
        shutil.copytree(self.venv, elsewhere, symlinks=True, ignore=shutil.ignore_patterns(".venvtx"))
        kept_apart = os.path.join(self.tmp, "store")
        self.assertEqual(self.venvtx("--store", kept_apart, "stamp").returncode, 0)
        bound = self.error("store_bound", 2, "--venv", elsewhere, "--store", kept_apart, "log")
        self.assertEqual(bound["details"]["venv"], os.path.realpath(self.venv))
        lock = open(os.path.join(self.venv, ".lock"), "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            self.error("locked", 5, "remove", "sglang", "--no-probe")
        finally:
            lock.close()
        # Every definition a command prints was used here.
        printed = {name for name in self.schema["$defs"] if {"$ref": "#/$defs/" + name} in self.schema["oneOf"]}
        self.assertEqual(printed - set(self.seen), set())

    def test_the_schema_refuses_a_key_missing_or_unknown(self):
        proc = self.venvtx("--json", "remove", "flash-attn", "--dry-run")
        document = json.loads(proc.stdout)
        check = validator_for(self.schema, "mutation")
        self.assertTrue(check.is_valid(document))
        for broken in (lambda d: d.pop("changed"), lambda d: d.update(extra=1),
                       lambda d: d["plan"].pop("unmatched"), lambda d: d["plan"]["packages"][0].update(version="x")):
            document_copy = copy.deepcopy(document)
            broken(document_copy)
            self.assertFalse(check.is_valid(document_copy), document_copy)


if __name__ == "__main__":
    unittest.main()
