"""Issue 41: the touch capture never acts for a watched command with venvtx's own powers. Each
command runs twice, under `venvtx run --preview never --capture touch` and without venvtx, and
must get the same errnos and leave the same bytes: a Landlock sandbox, another user's rights
(setpriv), a user namespace, openat2 RESOLVE_IN_ROOT from a project directory and from inside the venv, and the
shell's own descriptors (`/dev/stdout`, `/dev/fd/N`, process substitution)."""
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

from support import VENVTX, VenvTestCase, tree_hash

LANDLOCK = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# no writing, removing or truncating files anywhere (Landlock ABI 3)
attr = (ctypes.c_uint64 * 1)((1 << 1) | (1 << 4) | (1 << 5) | (1 << 14))
ruleset = libc.syscall(444, attr, 8, 0)
if ruleset < 0 or libc.prctl(38, 1, 0, 0, 0) or libc.syscall(446, ruleset, 0):
    print("no landlock"); raise SystemExit
for call in (lambda: os.unlink(sys.argv[1]), lambda: os.truncate(sys.argv[2], 0)):
    try:
        call(); print("done")
    except OSError as e:
        print(e.errno)
'''

OPENAT2_IN_ROOT = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
how = (ctypes.c_uint64 * 3)(os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, 0x10)  # RESOLVE_IN_ROOT
base = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fd = libc.syscall(437, base, sys.argv[2].encode(), how, 24)
if fd < 0:
    print(ctypes.get_errno()); raise SystemExit
os.write(fd, b"written below the given root\n"); print("done")
'''


def tree_of(top):
    """{relative path: bytes} of every file below `top`, read here."""
    files = {}
    for dirpath, _, names in os.walk(top):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, top)] = f.read()
    return files


class OwnPowers(VenvTestCase):

    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.tmp, "outside")

    def lay_outside(self):
        shutil.rmtree(self.outside, ignore_errors=True)
        os.makedirs(os.path.join(self.outside, "proj"))
        for name in ("victim.txt", "short.txt", "proj/notes.txt"):
            with open(os.path.join(self.outside, name), "w") as f:
                f.write("kept\n")

    def twice(self, argv, cwd=None, stdout_file=None, prepare=None):
        """(without venvtx, with venvtx): each run's output, exit code and the outside tree after
        it, on a fresh outside tree; with venvtx the venv must be as before once rolled back.
        `stdout_file`: venvtx's own stdout goes to a file (which a misread /dev/stdout reaches)."""
        results = []
        for watched in (False, True):
            self.lay_outside()
            if prepare:
                prepare()
            before = tree_hash(self.venv)
            prefix = [VENVTX, "--venv", self.venv, "run", "--preview",
                      "never", "--capture", "touch", "--"] if watched else []
            report = os.path.join(self.tmp, "report")  # the command's own output: venvtx prints too
            log = open(stdout_file, "w") if stdout_file else subprocess.PIPE
            proc = subprocess.run(prefix + ["sh", "-c", 'exec "$@" > "%s"' % report, "sh", *argv], stdout=log,
                                  stderr=subprocess.PIPE, text=True, env=self.env, cwd=cwd or self.tmp, timeout=120)
            if stdout_file:
                log.close()
            with open(report) as f:
                results.append((f.read(), proc.returncode, tree_of(self.outside), proc.stderr))
            if watched and tree_hash(self.venv) != before:
                rollback = self.venvtx("rollback")
                self.assertEqual(rollback.returncode, 0, rollback.stdout + rollback.stderr)
                self.assertEqual(tree_hash(self.venv), before, "the rollback was not exact")
        return results

    def assertSame(self, results):
        (plain_out, plain_rc, plain_tree, plain_err), (out, rc, tree, err) = results
        self.assertEqual((out, rc), (plain_out, plain_rc), "venvtx run: %s\nwithout venvtx: %s" % (err, plain_err))
        self.assertEqual(tree, plain_tree, "the outside tree differs with venvtx: %s" % err)

    def test_a_landlock_sandbox_holds_under_venvtx(self):
        results = self.twice([sys.executable, "-c", LANDLOCK, os.path.join(self.outside, "victim.txt"),
                              os.path.join(self.outside, "short.txt")])
        if results[0][0] == "no landlock\n":
            self.skipTest("Landlock unavailable here")
        self.assertEqual(results[0][0], "13\n13\n")
        self.assertSame(results)

    def test_another_users_rights_are_the_commands(self):
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root and setpriv")
        script = "import os, sys\ntry:\n    os.unlink(sys.argv[1]); print('done')\nexcept OSError as e:\n    print(e.errno)\n"
        results = self.twice(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                              script, os.path.join(self.outside, "victim.txt")])
        self.assertEqual(results[0][0], "13\n")
        self.assertSame(results)

    def test_a_user_namespace_keeps_its_limits(self):
        # ns root is real root, and nobody's file is not its to remove (nobody is not mapped)
        if os.geteuid() != 0 or subprocess.run(["unshare", "-U", "--map-root-user", "true"]).returncode != 0:
            self.skipTest("needs root and user namespaces")
        victim = os.path.join(self.outside, "proj", "notes.txt")

        def owned_by_nobody():
            for path in (os.path.dirname(victim), victim):
                os.chown(path, 65534, 65534)
            os.chmod(victim, 0o600)

        script = "import os, sys\ntry:\n    os.unlink(sys.argv[1]); print('done')\nexcept OSError as e:\n    print(e.errno)\n"
        results = self.twice(["unshare", "-U", "--map-root-user", sys.executable, "-c", script, victim],
                             prepare=owned_by_nobody)
        self.assertIn(results[0][0], ("13\n", "1\n"))
        self.assertSame(results)

    def test_resolve_in_root_from_a_project_directory(self):
        # venvtx runs in outside/proj, which has notes.txt; the command names /notes.txt below outside
        os.makedirs(os.path.join(self.outside, "proj"), exist_ok=True)
        results = self.twice([sys.executable, "-c", OPENAT2_IN_ROOT, self.outside, "/notes.txt"],
                             cwd=os.path.join(self.tmp))
        self.assertEqual(results[0][0], "done\n")
        self.assertSame(results)

    def test_resolve_in_root_from_inside_the_venv(self):
        # from the venv root, "/pyvenv.cfg" below outside/ is outside's, never the venv's
        before = tree_hash(self.venv)
        results = self.twice([sys.executable, "-c", OPENAT2_IN_ROOT, self.outside, "/pyvenv.cfg"], cwd=self.venv)
        self.assertEqual(results[0][0], "done\n")
        self.assertSame(results)
        self.assertEqual(tree_hash(self.venv), before)

    def test_resolve_in_root_of_a_venv_directory_is_captured(self):
        victim = os.path.join(self.site, "flash_attn", "__init__.py")
        before = tree_hash(self.venv)
        proc, tx = self.venvtx_json("run", "--preview", "never", "--capture", "touch", "--", sys.executable, "-c",
                                    OPENAT2_IN_ROOT, os.path.dirname(victim), "/__init__.py")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"written below the given root\n")
        self.assertEqual(tx["changed_outside"], [], tx)
        self.assertEqual(self.venvtx("rollback").returncode, 0)
        self.assertEqual(tree_hash(self.venv), before)

    def shell(self, script):
        return ["bash", "-c", textwrap.dedent(script), "bash", self.outside]

    def test_process_substitution(self):
        results = self.twice(self.shell('echo sub | tee >(cat > "$1/victim.txt") >/dev/null; wait; sleep 0.2'))
        self.assertEqual(results[0][2]["victim.txt"], b"sub\n")
        self.assertSame(results)

    def test_dev_stdout_is_the_commands_stdout(self):
        log = os.path.join(self.tmp, "venvtx-stdout.log")
        results = self.twice(self.shell('exec > "$1/victim.txt"; echo mine > /dev/stdout'), stdout_file=log)
        self.assertEqual(results[0][2]["victim.txt"], b"mine\n")
        self.assertSame(results)

    def test_dev_fd_n_is_the_commands_descriptor(self):
        results = self.twice(self.shell('exec 7> "$1/victim.txt"; echo seven > /dev/fd/7; echo "$?"'))
        self.assertEqual(results[0][2]["victim.txt"], b"seven\n")
        self.assertSame(results)


if __name__ == "__main__":
    unittest.main()
