"""A fleet for examples/fleet/: one venv per host, each a copy of the story venv, and one host
reached over real SSH through an sshd started on a loopback port with throwaway keys.

A "good" host also has a real nvidia-nccl-cu12 twin that ships the same libnccl.so.2, so removing
nvidia-nccl-cu13 keeps torch importable there. On a "bad" host the cu13 wheel is the only
provider, as in the story, and `import torch` fails without it."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from ansible_support import COLLECTIONS, REPO, VENVTX, site_packages, story_template, write_wheel

FLEET = os.path.join(REPO, "examples", "fleet")


def make_templates(root):
    """{"good": venv, "bad": venv}: the story venv, and the same with a real cu12 twin of nccl."""
    story = os.path.join(story_template(), "venv")
    wheels = os.path.join(root, "wheels")
    os.makedirs(wheels)
    library = os.path.join(site_packages(story), "nvidia", "nccl", "lib", "libnccl.so.2")
    with open(library, "rb") as f:
        library_bytes = f.read()
    bin_tag = [n for n in os.listdir(os.path.join(story_template(), "wheels")) if n.startswith("nvidia_nccl_cu13")][0]
    bin_tag = bin_tag[:-len(".whl")].split("-", 2)[2]
    write_wheel(wheels, "nvidia-nccl-cu12", "2.27.3", bin_tag,
                                  {"nvidia/nccl/__init__.py": "", "nvidia/nccl/lib/libnccl.so.2": library_bytes},
                                  top_level=["nvidia"])
    good = os.path.join(root, "good")
    subprocess.run(["cp", "-a", story, good], check=True)
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
    subprocess.run([os.path.join(good, "bin", "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    wheels, "nvidia-nccl-cu12"], check=True, env=env)
    return {"good": good, "bad": story}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """A real sshd on a loopback port that lets root in with a throwaway key."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root)
        self.key = os.path.join(root, "client_key")
        self.port = free_port()
        host_key = os.path.join(root, "host_key")
        for key in (self.key, host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        shutil.copy(self.key + ".pub", os.path.join(root, "authorized_keys"))
        config = os.path.join(root, "sshd_config")
        with open(config, "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\n"
                    % (self.port, host_key, os.path.join(root, "sshd.pid"), os.path.join(root, "authorized_keys")))
        os.makedirs("/run/sshd", exist_ok=True)  # its privilege separation directory
        self.log = open(os.path.join(root, "sshd.log"), "w")
        self.process = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", config], stderr=self.log)
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise AssertionError("sshd did not start: " + open(self.log.name).read())
                time.sleep(0.1)

    def host_vars(self):
        return ("ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=%d ansible_user=root "
                "ansible_ssh_private_key_file=%s ansible_ssh_common_args='-o StrictHostKeyChecking=no "
                "-o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes'" % (self.port, self.key))

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)
        self.log.close()


class Fleet:
    """Hosts h1..hN, each with its own venv (a copy of a template) and bin dir under root."""

    def __init__(self, root, templates, kinds, ssh_hosts, sshd):
        self.root = root
        self.hosts = ["h%d" % (i + 1) for i in range(len(kinds))]
        self.kind = dict(zip(self.hosts, kinds))
        lines = ["[fleet]"]
        for host in self.hosts:
            home = os.path.join(root, host)
            os.makedirs(home)
            subprocess.run(["cp", "-a", templates[self.kind[host]], self.venv(host)], check=True)
            connection = sshd.host_vars() if host in ssh_hosts else "ansible_connection=local"
            lines.append("%s %s venvtx_venv=%s venvtx_bin_dir=%s" % (host, connection, self.venv(host),
                                                                   os.path.join(home, "bin")))
        lines += ["", "[fleet:vars]", "ansible_python_interpreter=/usr/bin/python3"]
        self.inventory = os.path.join(root, "inventory.ini")
        with open(self.inventory, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.record = os.path.join(root, "rollout.json")
        self.config = os.path.join(root, "ansible.cfg")  # none of this machine's settings
        with open(self.config, "w") as f:
            f.write("[defaults]\n")

    def venv(self, host):
        return os.path.join(self.root, host, "venv")

    def playbook(self, name, *args, change="remove", packages=("nvidia-nccl-cu13",), probe="import torch",
                 source=VENVTX):
        """ansible-playbook's exit code and output."""
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_RETRY_FILES_ENABLED="False",
                   ANSIBLE_HOME=os.path.join(self.root, "ansible-home"),
                   ANSIBLE_LOCAL_TEMP=os.path.join(self.root, "ansible-local"),
                   ANSIBLE_REMOTE_TEMP=os.path.join(self.root, "ansible-remote"),
                   ANSIBLE_SSH_CONTROL_PATH_DIR=os.path.join(self.root, "cp"), ANSIBLE_CONFIG=self.config)
        env.pop("VENVTX_FAKE_GPUS", None)
        extra = {"change": change, "packages": list(packages), "probe": probe, "venvtx_source": source,
                 "venvtx_rollout_record": self.record}
        proc = subprocess.run(["ansible-playbook", "-i", self.inventory, os.path.join(FLEET, name),
                               "-e", json.dumps(extra), *args], capture_output=True, text=True, env=env,
                              cwd=self.root, timeout=900)
        return proc.returncode, proc.stdout + proc.stderr


def make_root(prefix):
    return tempfile.mkdtemp(prefix="venvtx-fleet-%s-" % prefix)
