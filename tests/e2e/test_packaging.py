"""venvtx installed like a real tool: the .deb (cpack) installed by dpkg into a scratch root, the
fully static release tarball (scripts/release.sh), the man page, and the shell completions that
`venvtx completion SHELL` generates from the CLI itself, typed into a real bash (tmux)."""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import zipfile

from support import REPO, VENVTX, VenvTestCase, story_template, tree_hash

BUILD = os.path.dirname(os.path.abspath(VENVTX))


def commands_and_options():
    """{command: [options]} as `venvtx --help` and `venvtx CMD --help` list them."""
    top = subprocess.run([VENVTX, "--help"], capture_output=True, text=True, check=True).stdout
    commands = re.findall(r"^  ([a-z]+)\s", top.split("Subcommands:")[1], re.M)
    table = {}
    for command in commands:
        text = subprocess.run([VENVTX, command, "--help"], capture_output=True, text=True, check=True).stdout
        table[command] = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b", text.split("Options:")[1])))
    return table


def bash_completions(script, words):
    """What the completion function offers for `words` (the last one being typed)."""
    array = " ".join("'%s'" % w for w in words)
    code = 'source "$1"; COMP_WORDS=(%s); COMP_CWORD=%d; _venvtx; printf "%%s\\n" "${COMPREPLY[@]}"' % (
        array, len(words) - 1)
    proc = subprocess.run(["bash", "--norc", "-c", code, "bash", script], capture_output=True, text=True)
    return proc.stdout.split()


class Terminal:
    """A shell in tmux (bash unless told), to type into as a person would."""

    def __init__(self, test, shell="bash --norc --noprofile", path="/usr/bin:/bin", home="/tmp"):
        self.socket = "venvtx-packaging-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.tmux("new-session", "-d", "-s", "t", "-x", "150", "-y", "30",
                  "env -i PATH=%s HOME=%s TERM=xterm %s" % (path, home, shell))
        test.addCleanup(self.tmux, "kill-server")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True)

    def type(self, keys, wait_for, timeout=10):
        self.tmux("send-keys", "-t", "t", "--", *keys)
        deadline = time.time() + timeout
        while time.time() < deadline:
            screen = self.tmux("capture-pane", "-p", "-t", "t").stdout
            if re.search(wait_for, screen):
                return screen
            time.sleep(0.05)
        raise AssertionError("never saw %r on the screen:\n%s" % (wait_for, screen))


class Completion(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="venvtx-completion-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def script(self, shell):
        proc = subprocess.run([VENVTX, "completion", shell], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(self.tmp, "venvtx." + shell)
        with open(path, "w") as out:
            out.write(proc.stdout)
        return path

    def test_bash_offers_every_command_and_each_commands_own_options(self):
        script = self.script("bash")
        table = commands_and_options()
        self.assertIn("rollback", table)
        self.assertEqual(sorted(c for c in bash_completions(script, ["venvtx", ""]) if not c.startswith("-")),
                         sorted(table))
        for command, options in table.items():
            offered = set(bash_completions(script, ["venvtx", "--venv", "/tmp", command, "-"]))
            self.assertLessEqual(set(options), offered, command)
        # A value is not mistaken for a command; --venv completes directories.
        self.assertEqual(bash_completions(script, ["venvtx", "--venv", "rollback", "ro"]), ["rollback"])
        self.assertIn(self.tmp, bash_completions(script, ["venvtx", "--venv", self.tmp]))

    @unittest.skipUnless(shutil.which("tmux"), "tmux not installed (scripts/setup.sh installs it)")
    def test_ro_tab_completes_to_rollback_in_a_real_bash(self):
        terminal = Terminal(self)
        terminal.type(["source %s; echo sourced" % self.script("bash"), "Enter"], r"(?m)^sourced$")
        screen = terminal.type(["venvtx ro", "Tab"], r"(?m)venvtx rollback$")
        self.assertIn("venvtx rollback", screen)
        terminal.type(["--re", "Tab"], r"venvtx rollback --redo")

    def typed_in(self, shell):
        """A real `shell` in tmux with venvtx's completion loaded and venvtx on PATH, and a story
        venv with one entry in its history; returns (terminal, venv)."""
        if not shutil.which(shell) or not shutil.which("tmux"):
            self.skipTest("%s or tmux not installed (scripts/setup.sh installs them)" % shell)
        venv = os.path.join(self.tmp, "venv")
        subprocess.run(["cp", "-a", os.path.join(story_template(), "venv"), venv], check=True)
        subprocess.run([VENVTX, "--venv", venv, "stamp"], check=True, capture_output=True)
        path = BUILD + ":/usr/bin:/bin"
        if shell == "zsh":
            functions = os.path.join(self.tmp, "functions")
            os.makedirs(functions)
            shutil.copy(self.script("zsh"), os.path.join(functions, "_venvtx"))
            terminal = Terminal(self, "zsh -f", path, self.tmp)
            terminal.type(["fpath=(%s $fpath); autoload -U compinit; compinit -u; echo sourced" % functions,
                           "Enter"], r"(?m)^sourced$")
        else:
            terminal = Terminal(self, "fish --no-config" if shell == "fish" else "bash --norc --noprofile", path,
                                self.tmp)
            terminal.type(["source %s; echo sourced" % self.script(shell), "Enter"], r"(?m)^sourced$")
        return terminal, venv

    def check_values_complete(self, shell):
        """Distribution names, option values, a command's words and entry ids, in `shell`."""
        terminal, venv = self.typed_in(shell)
        terminal.type(["venvtx --venv %s remove flash-a" % venv, "Tab"], r"(?m)remove flash-attn ?$")
        terminal.type(["C-u", "venvtx --venv %s install --preview al" % venv, "Tab"], r"(?m)--preview always ?$")
        terminal.type(["C-u", "venvtx completion z", "Tab"], r"(?m)completion zsh ?$")
        terminal.type(["C-u", "venvtx --venv %s show " % venv, "Tab"], r"(?m)show 1 ?$")
        terminal.type(["C-u", "venvtx --venv %s config probe-t" % venv, "Tab"], r"(?m)config probe-timeout ?$")

    def test_bash_completes_names_values_and_ids(self):
        self.check_values_complete("bash")

    def test_zsh_completes_names_values_and_ids(self):
        self.check_values_complete("zsh")

    def test_fish_completes_names_values_and_ids(self):
        self.check_values_complete("fish")

    def test_descriptions_keep_their_apostrophes(self):
        for shell, apostrophe in (("zsh", "venv'\\''s history"), ("fish", "venv\\'s history")):
            with open(self.script(shell)) as text:
                body = text.read()
            self.assertNotIn("venv`s", body, shell)
            self.assertIn(apostrophe, body, shell)
            # Whole phrases, asides left out: not the first word before a parenthesis.
            self.assertIn("uninstall every distribution whose normalized name matches a shell glob", body, shell)
            self.assertIn("auto, always, or never", body, shell)
        if shutil.which("fish"):
            proc = subprocess.run(["fish", "--no-config", "-c", "source %s; complete -C 'venvtx --venv '"
                                   % self.script("fish")], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_zsh_and_fish_scripts_parse(self):
        checked = 0
        for shell, check in (("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])):
            script = self.script(shell)
            with open(script) as text:
                body = text.read()
            for command in commands_and_options():
                self.assertIn(command, body, shell)
            if shutil.which(shell):
                proc = subprocess.run(check + [script], capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                checked += 1
        if not checked:
            self.skipTest("neither zsh nor fish installed: only their contents checked")

    def test_an_unknown_shell_is_one_line_and_exit_2(self):
        proc = subprocess.run([VENVTX, "completion", "tcsh"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr, "venvtx: no completion for shell 'tcsh' (bash, zsh or fish)\n")
        self.assertEqual(proc.stdout, "")


def version():
    return subprocess.run([VENVTX, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]


@unittest.skipUnless(os.path.exists(os.path.join(BUILD, "CPackConfig.cmake")) and shutil.which("dpkg"),
                     "no CPack config beside the binary, or no dpkg")
class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="venvtx-deb-")
        subprocess.run(["cpack", "-G", "DEB", "-B", cls.tmp], cwd=BUILD, check=True, capture_output=True)
        cls.deb = os.path.join(cls.tmp, "venvtx_%s_amd64.deb" % version())
        cls.root = os.path.join(cls.tmp, "root")
        # An empty dpkg database: the package is installed by dpkg itself, into this root only.
        for sub in ("var/lib/dpkg/info", "var/lib/dpkg/updates"):
            os.makedirs(os.path.join(cls.root, sub))
        open(os.path.join(cls.root, "var/lib/dpkg/status"), "w").close()
        cls.install = subprocess.run(["dpkg", "--root=" + cls.root, "--force-depends", "--force-script-chrootless",
                                      "--force-not-root", "-i", cls.deb], capture_output=True, text=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_dpkg_installs_it_and_it_runs(self):
        self.assertEqual(self.install.returncode, 0, self.install.stderr)
        status = subprocess.run(["dpkg", "--root=" + self.root, "-s", "venvtx"], capture_output=True, text=True)
        self.assertIn("Status: install ok installed", status.stdout)
        installed = os.path.join(self.root, "usr/bin/venvtx")
        proc = subprocess.run([installed, "--version"], capture_output=True, text=True)
        self.assertEqual(proc.stdout, "venvtx %s\n" % version())
        for path in ("usr/share/man/man1/venvtx.1.gz", "usr/share/bash-completion/completions/venvtx",
                     "usr/share/zsh/vendor-completions/_venvtx", "usr/share/fish/vendor_completions.d/venvtx.fish"):
            self.assertTrue(os.path.isfile(os.path.join(self.root, path)), path)

    def test_its_dependencies_are_debian_packages_this_machine_has(self):
        depends = subprocess.run(["dpkg-deb", "-f", self.deb, "Depends"], capture_output=True, text=True).stdout
        names = [part.split()[0] for part in depends.split(",") if part.strip()]
        self.assertIn("libsqlite3-0", names)
        for name in names:
            status = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", name], capture_output=True, text=True)
            self.assertIn("install ok installed", status.stdout, name)

    def test_the_man_page_documents_every_command(self):
        page = os.path.join(self.root, "usr/share/man/man1/venvtx.1.gz")
        if not shutil.which("man"):
            self.skipTest("man not installed")
        text = subprocess.run(["man", "-l", page], capture_output=True, text=True,
                              env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "80"}).stdout
        for heading in ("NAME", "SYNOPSIS", "COMMANDS", "EXIT STATUS", "EXAMPLES", "ENVIRONMENT", "FILES"):
            self.assertIn(heading, text)
        for command in commands_and_options():
            self.assertIn("venvtx %s" % command, text)
        for code in ("0", "1", "2", "3", "4", "5", "6", "130"):
            self.assertRegex(text, r"(?m)^       %s\s" % code)
        self.assertEqual([line for line in text.splitlines() if len(line) > 80], [])

    @unittest.skipUnless(shutil.which("lintian"), "lintian not installed (scripts/setup.sh installs it)")
    def test_lintian_finds_no_error(self):
        proc = subprocess.run(["lintian", "--tag-display-limit", "0", self.deb], capture_output=True, text=True)
        errors = [line for line in proc.stdout.splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], proc.stdout)
        listing = subprocess.run(["dpkg-deb", "-c", self.deb], capture_output=True, text=True).stdout
        self.assertIn("./usr/share/doc/venvtx/copyright", listing)

    @unittest.skipUnless(shutil.which("tmux"), "tmux not installed (scripts/setup.sh installs it)")
    def test_the_installed_bash_completion_completes_ro_to_rollback(self):
        terminal = Terminal(self)
        terminal.type(["source %s/usr/share/bash-completion/completions/venvtx; echo sourced" % self.root, "Enter"],
                      r"(?m)^sourced$")
        terminal.type(["venvtx ro", "Tab"], r"(?m)venvtx rollback$")


@unittest.skipIf(os.environ.get("VENVTX_SKIP_RELEASE") == "1", "VENVTX_SKIP_RELEASE=1")
class StaticRelease(VenvTestCase):
    """scripts/release.sh: one static binary that needs no library on the machine."""

    tarball = None

    @classmethod
    def setUpClass(cls):
        proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "release.sh")], capture_output=True,
                              text=True, timeout=1500)
        if proc.returncode != 0:
            raise AssertionError("scripts/release.sh failed:\n%s" % proc.stderr[-3000:])
        cls.tarball = os.path.join(REPO, proc.stdout.strip().splitlines()[-1])
        cls.unpacked = tempfile.mkdtemp(prefix="venvtx-release-")
        subprocess.run(["tar", "-xzf", cls.tarball, "-C", cls.unpacked], check=True)
        cls.binary = os.path.join(cls.unpacked, "venvtx-%s-linux-x86_64" % version(), "bin", "venvtx")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "unpacked", ""), ignore_errors=True)

    def test_named_for_its_version_and_holds_the_docs(self):
        self.assertEqual(os.path.basename(self.tarball), "venvtx-%s-linux-x86_64.tar.gz" % version())
        listing = subprocess.run(["tar", "-tzf", self.tarball], capture_output=True, text=True).stdout
        top = "venvtx-%s-linux-x86_64/" % version()
        for leaf in ("bin/venvtx", "share/man/man1/venvtx.1", "share/bash-completion/completions/venvtx",
                     "share/zsh/vendor-completions/_venvtx", "share/fish/vendor_completions.d/venvtx.fish",
                     "share/doc/venvtx/README.md", "share/doc/venvtx/LICENSE"):
            self.assertIn(top + leaf, listing.splitlines())
        # Unpacked with --strip-components=1 into a prefix, nothing lands beside bin/ and share/.
        self.assertEqual(sorted({line[len(top):].split("/")[0] for line in listing.splitlines()} - {""}),
                         ["bin", "share"])
        with open(os.path.join(os.path.dirname(self.tarball), "SHA256SUMS")) as sums:
            digest, name = sums.read().split()
        self.assertEqual(name, os.path.basename(self.tarball))
        proc = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=os.path.dirname(self.tarball),
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_no_interpreter_and_no_library(self):
        headers = subprocess.run(["readelf", "-l", "-d", self.binary], capture_output=True, text=True).stdout
        self.assertNotIn("INTERP", headers)
        self.assertNotIn("NEEDED", headers)
        # Alone in an empty root, with nothing to load: it still runs.
        root = os.path.join(self.tmp, "empty-root")
        os.makedirs(root)
        shutil.copy(self.binary, os.path.join(root, "venvtx"))
        runner = ["chroot", root] if os.geteuid() == 0 else ["unshare", "-r", "chroot", root]
        proc = subprocess.run(runner + ["/venvtx", "--version"], capture_output=True, text=True)
        self.assertEqual(proc.stdout, "venvtx %s\n" % version(), proc.stderr)

    def test_it_removes_packs_and_rolls_back_byte_identically(self):
        before = tree_hash(self.venv)
        env = {"PATH": "/usr/bin:/bin", "HOME": self.tmp, "VENVTX_FAKE_GPUS": "2"}
        proc = subprocess.run([self.binary, "--venv", self.venv, "remove", "nvidia-*-cu13", "--probe", "import torch"],
                              capture_output=True, text=True, env=env)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertEqual(tree_hash(self.venv), before)
        proc = subprocess.run([self.binary, "--venv", self.venv, "remove", "sglang", "--probe", "import torch"],
                              capture_output=True, text=True, env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotEqual(tree_hash(self.venv), before)
        # Packed (libarchive, linked in statically) and rolled back from the pack.
        proc = subprocess.run([self.binary, "--venv", self.venv, "gc", "--loose", "0"], capture_output=True, text=True,
                              env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertRegex(proc.stdout, r"packed \d+ objects?")
        proc = subprocess.run([self.binary, "--venv", self.venv, "rollback"], capture_output=True, text=True, env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(tree_hash(self.venv), before)


@unittest.skipIf(os.environ.get("VENVTX_SKIP_RELEASE") == "1", "VENVTX_SKIP_RELEASE=1")
class Wheel(unittest.TestCase):
    """scripts/wheel.sh: the static binary in a wheel that pip and pipx install (the guard that
    keeps it from removing itself: test_own_distribution)."""

    @classmethod
    def setUpClass(cls):
        proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "wheel.sh")], capture_output=True, text=True,
                              timeout=1500)
        if proc.returncode != 0:
            raise AssertionError("scripts/wheel.sh failed:\n%s" % proc.stderr[-3000:])
        cls.wheel = os.path.join(REPO, proc.stdout.strip().splitlines()[-1])

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="venvtx-wheel-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_NO_INDEX="1")
        self.env.pop("VIRTUAL_ENV", None)

    def new_venv(self, name, with_venvtx):
        venv = os.path.join(self.tmp, name)
        subprocess.run(["python3", "-m", "venv", venv], check=True)
        if with_venvtx:
            subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", self.wheel],
                           check=True, env=self.env)
        return venv

    def test_tagged_honestly_and_laid_out_as_a_wheel(self):
        name = os.path.basename(self.wheel)
        self.assertTrue(name.startswith("venvtx-%s-py3-none-" % version()), name)
        self.assertEqual(set(name[:-len(".whl")].split("-")[4].split(".")),
                         {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"})
        with zipfile.ZipFile(self.wheel) as archive:
            members = {info.filename: info for info in archive.infolist()}
            binary = "venvtx-%s.data/scripts/venvtx" % version()
            self.assertIn(binary, members)
            self.assertEqual((members[binary].external_attr >> 16) & 0o111, 0o111)
            self.assertIn("venvtx/__main__.py", members)
            dist_info = "venvtx-%s.dist-info/" % version()
            self.assertIn("Root-Is-Purelib: false", archive.read(dist_info + "WHEEL").decode())
            # RECORD, checked with our own hashing: every member, each hash its bytes' own.
            record = {}
            for line in archive.read(dist_info + "RECORD").decode().splitlines():
                path, digest, size = line.rsplit(",", 2)
                record[path] = digest
            self.assertEqual(set(record), set(members))
            for path, digest in record.items():
                if path != dist_info + "RECORD":
                    data = archive.read(path)
                    expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual(digest, "sha256=" + expected, path)

    def test_pip_installs_it_python_m_venvtx_runs_it_and_pip_uninstalls_it(self):
        venv = self.new_venv("tool", False)
        without = tree_hash(venv)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "install", "-q", self.wheel], check=True, env=self.env)
        for command in ([os.path.join(venv, "bin", "venvtx"), "--version"], [python, "-m", "venvtx", "--version"]):
            proc = subprocess.run(command, capture_output=True, text=True, env=self.env)
            self.assertEqual(proc.stdout, "venvtx %s\n" % version(), proc.stderr)
        subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "venvtx"], check=True, env=self.env)
        # All gone, but for the bytecode pip compiled of itself while it ran.
        def kept(tree):
            return {path: node for path, node in tree.items() if "__pycache__" not in path}
        self.assertEqual(kept(tree_hash(venv)), kept(without))

    def test_pipx_installs_it(self):
        env = dict(self.env, PIPX_HOME=os.path.join(self.tmp, "pipx"), PIPX_BIN_DIR=os.path.join(self.tmp, "bin"))
        proc = subprocess.run(["pipx", "install", "--pip-args=--no-index", self.wheel], capture_output=True,
                              text=True, env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc = subprocess.run([os.path.join(self.tmp, "bin", "venvtx"), "--version"], capture_output=True, text=True)
        self.assertEqual(proc.stdout, "venvtx %s\n" % version(), proc.stderr)

    def test_installed_in_a_venv_it_will_not_remove_itself(self):
        venv = self.new_venv("managed", True)
        before = tree_hash(venv)
        proc = subprocess.run([os.path.join(venv, "bin", "venvtx"), "--venv", venv, "--json", "remove", "venvtx"],
                              capture_output=True, text=True, env=self.env)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["error"]["kind"], "own_distribution")
        self.assertEqual(tree_hash(venv), before)


if __name__ == "__main__":
    unittest.main()
