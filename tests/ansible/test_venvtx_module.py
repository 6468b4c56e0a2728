"""The venvtx Ansible module on its own: argument validation, check mode, diff mode, exact
`changed`, and every venvtx exit code mapped onto the task's result. The module runs as a real
process against the real venvtx binary and a real copy of the story venv; trees are compared
with the tests' own hashing."""
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ansible_support import (COLLECTION, COLLECTIONS, REPO, VENVTX, assert_same_tree, log, run_module,
                             site_packages, story_template, tree_hash)
from ansible_collections.venvtx.venvtx.plugins.module_utils import venvtx_cli
from ansible_collections.venvtx.venvtx.plugins.modules import venvtx as venvtx_module

IMPORT_TORCH = ["import torch"]


def wheel_args():
    template = story_template()
    return ["--no-index", "--find-links", os.path.join(template, "wheels")]


def offline_env():
    return dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")


class TestArguments:
    @pytest.mark.parametrize("args, message", [
        ({"command": "remove"}, "packages"),
        ({"command": "install"}, "packages, installer_args"),
        ({"command": "remove", "packages": ["x"], "to": 1}, "to: not an option of command=remove"),
        ({"command": "probe", "keep_going": True}, "keep_going: not an option of command=probe"),
        ({"command": "rollback", "to": 0, "transaction": 1}, "mutually exclusive"),
        ({"command": "remove", "packages": ["x"], "probe": ["import x"], "no_probe": True},
         "probe and no_probe exclude each other"),
        ({"command": "remove", "packages": ["x"], "preview": "sometimes"}, "preview must be one of"),
        ({"command": "uninstall", "packages": ["x"]}, "command must be one of"),
        ({"command": "remove", "packages": ["x"], "yes": True}, "Unsupported parameters"),
    ])
    def test_bad_arguments_fail_before_venvtx_runs(self, tmp_path, venv, args, message):
        before = tree_hash(venv)
        result = run_module(tmp_path, dict(args, venv=venv))
        assert result.get("failed") is True, result
        assert message in result["msg"]
        assert "cmd" not in result  # venvtx never ran
        assert_same_tree(before, tree_hash(venv))

    def test_a_missing_binary_is_a_clear_failure(self, tmp_path, venv):
        result = run_module(tmp_path, {"command": "status", "venv": venv, "binary": str(tmp_path / "nowhere")})
        assert result["failed"] is True
        assert "nowhere" in result["msg"]


class TestChangedIsExact:
    def test_remove_then_remove_again_then_rollback_twice(self, tmp_path, venv):
        before = tree_hash(venv)
        first = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"],
                                      "probe": IMPORT_TORCH})
        assert first["changed"] is True and first["rc"] == 0, first
        assert first["transaction"]["state"] == "committed"
        assert not os.path.exists(os.path.join(site_packages(venv), "flash_attn"))
        again = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        assert again["changed"] is False and not again.get("failed"), again
        assert again.get("error_kind") is None and again["tx"] is None, again
        undo = run_module(tmp_path, {"command": "rollback", "venv": venv, "transaction": first["tx"]})
        assert undo["changed"] is True, undo
        assert_same_tree(before, tree_hash(venv))
        undo_again = run_module(tmp_path, {"command": "rollback", "venv": venv, "transaction": first["tx"]})
        assert undo_again["changed"] is False and not undo_again.get("failed"), undo_again
        assert "already undone" in undo_again["msg"]

    def test_install_what_is_installed_changes_nothing(self, tmp_path, venv):
        args = {"command": "install", "venv": venv, "packages": ["flash-attn==2.8.3"], "installer_args": wheel_args()}
        result = run_module(tmp_path, args, env=offline_env())
        assert result["changed"] is False and not result.get("failed"), result
        assert result["tx"] is None
        assert log(venv) == []


class TestCheckMode:
    def test_a_change_that_would_fail_fails_and_changes_nothing(self, tmp_path, venv):
        before = tree_hash(venv)
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["nvidia-*-cu13"],
                                       "probe": IMPORT_TORCH}, check_mode=True)
        assert result["failed"] is True and result["rc"] == 3, result
        assert result["verdict"] == "fails"
        assert result["changed"] is True  # it would change the venv
        assert "--dry-run" in result["cmd"]
        assert_same_tree(before, tree_hash(venv))
        assert log(venv) == []

    def test_a_change_that_would_pass_says_so_and_changes_nothing(self, tmp_path, venv):
        before = tree_hash(venv)
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"],
                                       "probe": IMPORT_TORCH}, check_mode=True)
        assert not result.get("failed") and result["changed"] is True, result
        assert result["verdict"] == "passes"
        assert [p["name"] for p in result["plan"]["packages"]] == ["flash-attn"]
        assert_same_tree(before, tree_hash(venv))

    def test_an_install_what_if_names_the_versions_and_changes_nothing(self, tmp_path, venv):
        run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        before = tree_hash(venv)
        result = run_module(tmp_path, {"command": "install", "venv": venv, "packages": ["flash-attn==2.8.3"],
                                       "installer_args": wheel_args(), "probe": IMPORT_TORCH}, check_mode=True,
                            diff=True, env=offline_env())
        assert not result.get("failed") and result["changed"] is True, result
        assert result["verdict"] == "passes"
        assert result["plan"]["packages"] == [{"name": "flash-attn", "before": None, "after": "2.8.3"}]
        assert "flash-attn==2.8.3" not in result["diff"]["before"].splitlines()
        assert "flash-attn==2.8.3" in result["diff"]["after"].splitlines()
        assert_same_tree(before, tree_hash(venv))

    def test_nothing_to_do_is_not_changed(self, tmp_path, venv):
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["not-installed"]},
                            check_mode=True)
        assert result["changed"] is False and not result.get("failed"), result

    def test_a_rollback_check_names_what_it_would_undo(self, tmp_path, venv):
        done = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        after = tree_hash(venv)
        result = run_module(tmp_path, {"command": "rollback", "venv": venv, "transaction": done["tx"]},
                            check_mode=True)
        assert result["changed"] is True and not result.get("failed"), result
        assert result["plan"]["undoes"] == [done["tx"]]
        assert_same_tree(after, tree_hash(venv))


class TestDiffMode:
    def test_distributions_before_and_after(self, tmp_path, venv):
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn", "sglang"]},
                            diff=True)
        assert result["changed"] is True, result
        before, after = result["diff"]["before"].splitlines(), result["diff"]["after"].splitlines()
        assert "flash-attn==2.8.3" in before and "sglang==0.5.5" in before
        assert sorted(set(before) - set(after)) == ["flash-attn==2.8.3", "sglang==0.5.5"]
        assert set(after) <= set(before)

    def test_check_and_diff_show_the_plan(self, tmp_path, venv):
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["nvidia-cudnn-cu13"]},
                            check_mode=True, diff=True)
        assert "nvidia-cudnn-cu13 9.19.0.56 -> (absent)" in result["diff"]["prepared"]
        assert "libcudnn.so.9 would lose its last provider" in result["diff"]["prepared"]
        assert "nvidia-cudnn-cu13==9.19.0.56" not in result["diff"]["after"]


def hold_lock(path):
    """Another process holding flock(LOCK_EX) on path, as uv does on <venv>/.lock."""
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
                               "print('held', flush=True); time.sleep(120)", path], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def processes_of(venv, program):
    """Pids of the processes running `program` (argv[0]) on venv (named in their argv)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[0] == program.encode() and (venv.encode() in argv or program.startswith(venv)):
            pids.append(int(pid))
    return pids


class TestEveryExitCode:
    """Each of venvtx's exit codes, produced for real, and what the task reports."""

    def test_0_done(self, tmp_path, venv):
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        assert (result["rc"], result.get("failed", False), result["error_kind"]) == (0, False, None)

    def test_1_a_failed_system_call(self, tmp_path, venv):
        (tmp_path / "a-file").write_text("")
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"],
                                       "store": str(tmp_path / "a-file" / "store")})
        assert (result["rc"], result["failed"], result["error_kind"]) == (1, True, "system"), result
        assert result["error"]["details"]["errno"] == errno.ENOTDIR
        assert "Not a directory" in result["msg"]

    def test_2_bad_input(self, tmp_path, venv):
        run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        result = run_module(tmp_path, {"command": "rollback", "venv": venv, "transaction": 42})
        assert (result["rc"], result["failed"], result["error_kind"]) == (2, True, "not_found"), result
        assert result["error"]["details"]["tx"] == 42

    def test_3_probe_failed_and_restored(self, tmp_path, venv):
        before = tree_hash(venv)
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["nvidia-*-cu13"],
                                       "probe": IMPORT_TORCH, "preview": "never"})
        assert (result["rc"], result["failed"], result["error_kind"]) == (3, True, "probe_failed"), result
        assert result["restored"] is True and result["changed"] is False
        assert result["transaction"]["state"] == "rolled_back"
        assert "cannot open shared object file" in result["msg"]
        assert_same_tree(before, tree_hash(venv))

    def test_4_failing_before_and_after(self, tmp_path, venv):
        before = tree_hash(venv)
        result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"],
                                       "probe": ["import not_a_module_anywhere"]})
        assert (result["rc"], result["failed"], result["error_kind"]) == (4, True, "baseline_failed"), result
        assert result["restored"] is True and result["repair"] == "still_failing"
        assert_same_tree(before, tree_hash(venv))

    def test_5_locked(self, tmp_path, venv):
        holder = hold_lock(os.path.join(venv, ".lock"))
        try:
            result = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        finally:
            holder.kill()
            holder.wait()
        assert (result["rc"], result["failed"], result["error_kind"]) == (5, True, "locked"), result

    def test_6_drift(self, tmp_path, venv):
        done = run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        os.makedirs(os.path.join(site_packages(venv), "flash_attn"))
        with open(os.path.join(site_packages(venv), "flash_attn", "__init__.py"), "w") as f:
            f.write("# someone else's\n")
        result = run_module(tmp_path, {"command": "rollback", "venv": venv, "transaction": done["tx"]})
        assert (result["rc"], result["failed"], result["error_kind"]) == (6, True, "drift"), result
        assert result["error"]["details"]["paths"]

    def test_130_interrupted_during_the_probe(self, tmp_path, venv):
        before = tree_hash(venv)
        args = {"command": "remove", "venv": venv, "packages": ["flash-attn"], "preview": "never",
                "no_baseline": True, "probe": ["import time; time.sleep(60)"]}
        env = dict(os.environ, PYTHONPATH=COLLECTIONS)
        path = tmp_path / "args.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, binary=VENVTX)}))
        module = subprocess.Popen([sys.executable, venvtx_module.__file__, str(path)], stdout=subprocess.PIPE,
                                  text=True, env=env)
        deadline = time.time() + 60
        while not processes_of(venv, os.path.join(venv, "bin", "python")):  # the probe (no baseline)
            assert time.time() < deadline, "the probe never started"
            time.sleep(0.05)
        for pid in processes_of(venv, VENVTX):
            os.kill(pid, signal.SIGINT)
        result = json.loads(module.communicate(timeout=120)[0])
        assert (result["rc"], result["failed"], result["error_kind"]) == (130, True, "interrupted"), result
        assert result["restored"] is True
        assert_same_tree(before, tree_hash(venv))


class TestMapping:
    """interpret() for every exit code the docs list, with venvtx's documents as they are."""

    def test_the_module_knows_every_exit_code_of_the_contract(self):
        with open(os.path.join(REPO, "docs", "json.md")) as f:
            table = f.read().split("## Exit codes", 1)[1].split("##", 1)[0]
        documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)}
        assert documented == set(venvtx_cli.EXIT_MEANINGS)

    @pytest.mark.parametrize("rc, kind, failed, restored", [
        (1, "system", True, False), (2, "usage", True, False), (2, "installer_failed", True, False),
        (5, "locked", True, False), (6, "drift", True, False), (6, "verify_failed", True, False),
    ])
    def test_errors_keep_their_kind(self, rc, kind, failed, restored):
        document = {"schema_version": 1, "error": {"kind": kind, "exit_code": rc, "message": "m", "details": {}}}
        result = venvtx_cli.interpret({"command": "install"}, rc, document, "", False)
        assert (result["failed"], result["error_kind"], result["restored"], result["msg"]) == (failed, kind,
                                                                                               restored, "m")

    @pytest.mark.parametrize("rc, kind", [(3, "probe_failed"), (4, "baseline_failed"), (130, "interrupted")])
    def test_restored_transactions(self, rc, kind):
        tx = {"id": 7, "state": "rolled_back", "probe": {"error": "boom"}, "packages": [], "repair": None}
        document = {"schema_version": 1, "dry_run": False, "changed": False, "transaction": tx, "plan": None,
                    "what_if": None, "changed_outside": [], "not_at_target": None}
        result = venvtx_cli.interpret({"command": "remove"}, rc, document, "", False)
        assert (result["failed"], result["error_kind"], result["restored"], result["tx"]) == (True, kind, True, 7)
        assert result["msg"].endswith("(tx 7): boom")

    def test_another_schema_is_refused(self):
        result = venvtx_cli.interpret({"command": "status"}, 0, {"schema_version": 2}, "", False)
        assert result["failed"] and "schema 2" in result["msg"]

    def test_nothing_to_undo_is_done_only_for_the_newest(self):
        document = {"schema_version": 1, "error": {"kind": "nothing_to_undo", "exit_code": 2, "message": "m",
                                                   "details": {}}}
        assert not venvtx_cli.interpret({"command": "rollback"}, 2, document, "", False)["failed"]
        assert venvtx_cli.interpret({"command": "rollback", "transaction": 3}, 2, document, "", False)["failed"]
        assert venvtx_cli.interpret({"command": "rollback", "to": 0}, 2, document, "", False)["failed"]

    def test_no_document(self):
        result = venvtx_cli.interpret({"command": "status"}, 1, None, "venvtx: killed\n", False)
        assert result["failed"] and "venvtx: killed" in result["msg"]


class TestQueries:
    def test_probe_passes_and_fails(self, tmp_path, venv):
        ok = run_module(tmp_path, {"command": "probe", "venv": venv, "probe": IMPORT_TORCH})
        assert not ok.get("failed") and ok["changed"] is False and ok["probe"]["passed"] is True, ok
        bad = run_module(tmp_path, {"command": "probe", "venv": venv, "probe": ["import sys; sys.exit(7)"]})
        assert bad["failed"] is True and bad["error_kind"] == "probe_failed"
        assert bad["probe"]["exit_code"] == 7

    def test_status_says_what_changed_outside(self, tmp_path, venv):
        run_module(tmp_path, {"command": "remove", "venv": venv, "packages": ["flash-attn"]})
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "uninstall", "-y", "-q", "sglang"],
                       check=True, env=offline_env())
        result = run_module(tmp_path, {"command": "status", "venv": venv})
        assert result["changed"] is False and result["status"]["changed"] is True, result
        assert [d["name"] for d in result["status"]["dists"]] == ["sglang"]


class TestDocumentation:
    def ansible_doc(self, *args):
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1")
        return subprocess.run(["ansible-doc", *args], capture_output=True, text=True, env=env)

    def test_ansible_doc_renders_it(self):
        proc = self.ansible_doc("venvtx.venvtx.venvtx")
        assert proc.returncode == 0, proc.stderr
        for word in ("OPTIONS", "EXAMPLES", "RETURN VALUES", "check_mode", "command:"):
            assert word in proc.stdout

    def test_the_collection_builds_and_installs(self, tmp_path):
        built = subprocess.run(["ansible-galaxy", "collection", "build", COLLECTION, "--output-path", str(tmp_path)],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        artifact = str(tmp_path / "venvtx-venvtx-0.1.0.tar.gz")
        installed = subprocess.run(["ansible-galaxy", "collection", "install", "--offline", "-p",
                                    str(tmp_path / "collections"), artifact], capture_output=True, text=True)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"))
        proc = subprocess.run(["ansible-doc", "venvtx.venvtx.venvtx"], capture_output=True, text=True, env=env)
        assert proc.returncode == 0 and "check_mode" in proc.stdout, proc.stderr

    def test_the_documented_options_are_the_real_ones(self):
        proc = self.ansible_doc("--json", "venvtx.venvtx.venvtx")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)["venvtx.venvtx.venvtx"]["doc"]
        assert set(doc["options"]) == set(venvtx_module.ARGUMENT_SPEC)
        for name, spec in venvtx_module.ARGUMENT_SPEC.items():
            assert doc["options"][name]["type"] == spec["type"], name
            assert doc["options"][name].get("choices") == spec.get("choices"), name
