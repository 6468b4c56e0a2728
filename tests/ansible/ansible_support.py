"""Shared pieces of the Ansible tests: the collection on the path, the venvtx binary, the story
venv (tests/e2e/support.py), and the module run as Ansible runs it: a real process given its
arguments file."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
COLLECTIONS = os.path.join(REPO, "ansible")
COLLECTION = os.path.join(COLLECTIONS, "ansible_collections", "venvtx", "venvtx")
MODULE = os.path.join(COLLECTION, "plugins", "modules", "venvtx.py")
VENVTX = os.environ.get("VENVTX_BIN", os.path.join(REPO, "build", "venvtx"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, COLLECTIONS)

from support import site_packages, story_template, tree_diff, tree_hash, write_wheel  # noqa: E402,F401


def run_module(tmp_path, args, check_mode=False, diff=False, env=None):
    """The module's result, run as Ansible runs it: a separate Python process reading its
    arguments from a file, printing one JSON result."""
    module_args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    module_args.setdefault("binary", VENVTX)
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    environment = dict(env or os.environ, PYTHONPATH=COLLECTIONS)
    environment.pop("VENVTX_FAKE_GPUS", None)
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, env=environment,
                          timeout=300)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("the module printed no JSON (exit %d):\n%s\n%s" % (proc.returncode, proc.stdout,
                                                                               proc.stderr))


def assert_same_tree(before, after):
    assert before == after, tree_diff(before, after)


def log(venv):
    proc = subprocess.run([VENVTX, "--venv", venv, "--json", "log"], capture_output=True, text=True)
    return json.loads(proc.stdout)["transactions"] if proc.returncode == 0 else []
