"""examples/fleet/ run by real ansible-playbook over a fleet of venvs: 7 hosts on the local
connection and one over real SSH (an sshd on a loopback port). The rollout goes in waves
[1, 25%, 100%]; when the probe fails on a host of the second wave, every host the rollout
changed is rolled back byte-identically (the tests' own tree hashes), the failing host is
restored by venvtx, the third wave is never touched, and the verdict table names each host."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ansible_support import VENVTX, tree_diff, tree_hash, write_wheel
from fleet_hosts import Fleet, Sshd, make_root, make_templates

ROW = re.compile(r'^\s*"(h\d+) +(.{20})  (.*?)",?$', re.M)
RECAP = re.compile(r"^(h\d+) +: ok=(\d+) +changed=(\d+) +unreachable=(\d+) +failed=(\d+)", re.M)


def verdicts(output):
    """host -> (verdict, note) from the last verdict table printed."""
    rows = {}
    for host, verdict, note in ROW.findall(output):
        rows[host] = (verdict.strip(), note)
    return rows


def recap(output):
    return {host: {"ok": int(ok), "changed": int(changed), "unreachable": int(unreachable), "failed": int(failed)}
            for host, ok, changed, unreachable, failed in RECAP.findall(output)}


def stored_transactions(venv):
    """The states venvtx recorded, read from its SQLite index (absent: venvtx never ran there)."""
    index = os.path.join(venv, ".venvtx", "index.sqlite")
    if not os.path.exists(index):
        return None
    db = sqlite3.connect(index)
    try:
        return [row[0] for row in db.execute("SELECT state FROM transactions ORDER BY id")]
    finally:
        db.close()


@pytest.fixture(scope="module")
def world(request):
    """The templates and the sshd, once; everything is kept (and named) when a test failed."""
    root = make_root("world")
    templates = make_templates(os.path.join(root, "templates"))
    sshd = Sshd(os.path.join(root, "ssh"))
    yield root, templates, sshd
    sshd.stop()
    if request.session.testsfailed:
        print("\n  kept the fleet's hosts: %s" % root)
    else:
        shutil.rmtree(root, ignore_errors=True)


def fleet(world, name, kinds, ssh_hosts=("h2",)):
    root, templates, sshd = world
    path = os.path.join(root, name)
    os.makedirs(path)
    made = Fleet(path, templates, kinds, ssh_hosts, sshd)
    return made, {host: tree_hash(made.venv(host)) for host in made.hosts}


def assert_trees(made, before, hosts):
    for host in hosts:
        after = tree_hash(made.venv(host))
        assert before[host] == after, "%s differs:\n%s" % (host, tree_diff(before[host], after))


class TestAFailingWave:
    """h1 the canary, h2 (over SSH) and h3 the second wave, h4..h8 the third; h3 is bad."""

    KINDS = ["good", "good", "bad", "good", "good", "good", "good", "good"]

    def test_check_then_the_real_rollout(self, world):
        made, before = fleet(world, "failing", self.KINDS)
        code, output = made.playbook("install_venvtx.yml")
        assert code == 0, output

        # --check --diff: a what-if everywhere, nothing applied, the one bad host named.
        code, output = made.playbook("rollout.yml", "--check", "--diff")
        assert code != 0, output
        table = verdicts(output)
        assert table["h3"][0] == "would fail", output
        assert {host for host, row in table.items() if row[0] == "would change"} == set(made.hosts) - {"h3"}
        assert "-nvidia-nccl-cu13==2.28.9" in output  # the diff: before -> after
        assert_trees(made, before, made.hosts)
        assert all(stored_transactions(made.venv(host)) in (None, []) for host in made.hosts)

        code, output = made.playbook("rollout.yml")
        assert code != 0, output
        table = verdicts(output)
        assert set(table) == set(made.hosts), output
        assert table["h1"][0] == "rolled back" and table["h2"][0] == "rolled back", output
        assert table["h3"][0] == "failed, restored", output
        assert "the live venv never changed" in table["h3"][1] and "nccl" in table["h3"][1], output
        for host in ("h4", "h5", "h6", "h7", "h8"):
            assert table[host][0] == "untouched", output
        # Byte-identical everywhere: rolled back (h1, h2), restored by venvtx (h3), untouched.
        assert_trees(made, before, made.hosts)
        assert stored_transactions(made.venv("h1")) == ["undone", "committed"]
        assert stored_transactions(made.venv("h2")) == ["undone", "committed"]
        # Previewed, it never reached the venv (aborted); in place (no overlay here), restored.
        assert stored_transactions(made.venv("h3"))[-1] in ("aborted", "rolled_back")
        for host in ("h4", "h5", "h6", "h7", "h8"):
            assert stored_transactions(made.venv(host)) is None, host  # venvtx never ran there
        assert recap(output)["h3"]["failed"] == 1


class TestAPassingRollout:
    KINDS = ["good"] * 6

    def test_twice_then_rolled_back(self, world):
        made, before = fleet(world, "passing", self.KINDS)
        code, output = made.playbook("rollout.yml", "--diff")
        assert code == 0, output
        table = verdicts(output)
        assert {row[0] for row in table.values()} == {"changed"}, output
        assert "-nvidia-nccl-cu13==2.28.9" in output
        for host in made.hosts:
            assert stored_transactions(made.venv(host)) == ["committed"], host
        with open(made.record) as f:
            record = json.load(f)["hosts"]
        assert sorted(record) == made.hosts and all(entry["tx"] == 1 for entry in record.values())

        code, output = made.playbook("rollout.yml")
        assert code == 0, output
        counts = recap(output)
        assert sorted(counts) == made.hosts
        assert all(count["changed"] == 0 and count["failed"] == 0 for count in counts.values()), output
        assert {row[0] for row in verdicts(output).values()} == {"unchanged"}, output

        code, output = made.playbook("rollback.yml")
        assert code == 0, output
        assert all(count["changed"] == 1 for count in recap(output).values()), output
        assert_trees(made, before, made.hosts)
        code, output = made.playbook("rollback.yml")
        assert code == 0, output
        assert all(count["changed"] == 0 for count in recap(output).values()), output


class TestInstallingVenvtx:
    """install_venvtx.yml from each kind of venvtx_source: a release tarball and a wheel, laid
    out as scripts/release.sh and scripts/wheel.sh lay them out (around the binary under test)."""

    def test_from_a_tarball_and_from_a_wheel(self, world):
        made, _ = fleet(world, "sources", ["good", "good"])
        sources = os.path.join(made.root, "sources")
        top = os.path.join(sources, "venvtx-0.1.0-linux-x86_64")
        os.makedirs(os.path.join(top, "bin"))
        os.makedirs(os.path.join(top, "share", "bash-completion", "completions"))
        shutil.copy(VENVTX, os.path.join(top, "bin", "venvtx"))
        with open(os.path.join(top, "share", "bash-completion", "completions", "venvtx"), "w") as f:
            f.write("# not the binary\n")
        tarball = os.path.join(sources, "venvtx-0.1.0-linux-x86_64.tar.gz")
        subprocess.run(["tar", "-czf", tarball, "-C", sources, "venvtx-0.1.0-linux-x86_64"], check=True)
        wheel = write_wheel(sources, "venvtx", "0.1.0", "py3-none-manylinux_2_17_x86_64",
                                             {"venvtx-0.1.0.data/scripts/venvtx": Path(VENVTX),
                                              "venvtx/__init__.py": ""})
        for source in (tarball, str(wheel)):
            for host in made.hosts:
                shutil.rmtree(os.path.join(made.root, host, "bin"), ignore_errors=True)
            code, output = made.playbook("install_venvtx.yml", source=source)
            assert code == 0, output
            for host in made.hosts:
                installed = os.path.join(made.root, host, "bin", "venvtx")
                proc = subprocess.run([installed, "--version"], capture_output=True, text=True)
                assert proc.stdout.startswith("venvtx "), (source, proc.stderr)


class TestWatchUnit:
    """examples/fleet/watch.yml puts the watch unit on every host, running that host's venvtx
    (issue 38). Starting it needs a systemd user manager, which these hosts lack: here it is only
    written (venvtx_watch_start=false), one unit directory per host."""

    def test_the_unit_runs_each_hosts_venvtx(self, world):
        made, _ = fleet(world, "watch", ["good", "good"])
        units = os.path.join(made.root, "units")
        code, output = made.playbook("watch.yml", "-e", json.dumps({
            "venvtx_unit_dir": units + "/{{ inventory_hostname }}", "venvtx_watch_start": False}))
        assert code == 0, output
        for host in made.hosts:
            with open(os.path.join(units, host, "venvtx-watch@.service")) as f:
                unit = f.read()
            expected = "ExecStart=%s --venv %%f watch" % os.path.join(made.root, host, "bin", "venvtx")
            assert expected in unit.splitlines(), unit
            assert "[Install]" in unit and "Restart=on-failure" in unit, unit
        code, output = made.playbook("watch.yml", "-e", json.dumps({
            "venvtx_unit_dir": units + "/{{ inventory_hostname }}", "venvtx_watch_start": False}))
        assert code == 0 and all(host["changed"] == 0 for host in recap(output).values()), output  # written once
