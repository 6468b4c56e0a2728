"""docs/usage.md's session runs as written (issue 40): its fenced block under "A session, command
by command", line by line, in a demo venv built for this test (its scripts and `activate` name
it, so a plain `pip` is the venv's), activated as a user has it. Each line must exit as its
comment says ("exit N:", else 0); the venv's trees are compared with this suite's own hashing
where the story says the venv is back as it was."""
import os
import re
import subprocess
import sys
import unittest

from support import VENVTX, VenvTestCase, scratch, tree_hash

HERE = os.path.dirname(os.path.abspath(__file__))
USAGE = os.path.join(HERE, "..", "..", "docs", "usage.md")
MAKE_STORY = os.path.join(HERE, "..", "fixtures", "make_story_venv.py")


def story_lines():
    """The command lines of the session block, as written."""
    with open(USAGE) as f:
        text = f.read()
    section = text.split("## A session, command by command", 1)[1]
    block = section.split("```\n", 2)[1]
    return [line for line in block.splitlines() if line.strip()]


def expected_exit(line):
    found = re.search(r"#\s*exit (\d+):", line)
    return int(found.group(1)) if found else 0


class UsageStory(VenvTestCase):
    def setUp(self):  # not the template's copy: the story builds its own venv
        self.tmp, self.in_memory = scratch("venvtx-e2e-%s-" % self._testMethodName)
        story = os.path.join(self.tmp, "demo")
        subprocess.run([sys.executable, MAKE_STORY, story], check=True, capture_output=True)
        self.venv = os.path.join(story, "venv")
        self.env = dict(os.environ)
        self.env.pop("VENVTX_FAKE_GPUS", None)
        self.env.update(VIRTUAL_ENV=self.venv, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1",
                        PIP_DISABLE_PIP_VERSION_CHECK="1",
                        PATH=os.pathsep.join([os.path.join(self.venv, "bin"), os.path.dirname(VENVTX),
                                              self.env.get("PATH", "")]))

    def say(self, line):
        proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=self.env, cwd=self.tmp,
                              timeout=300)
        self.assertEqual(proc.returncode, expected_exit(line),
                         "%s\n%s%s" % (line, proc.stdout, proc.stderr))
        return proc.stdout + proc.stderr

    def imports_torch(self):
        return subprocess.run(["python", "-c", "import torch"], capture_output=True, env=self.env).returncode == 0

    def test_the_session_runs_as_written(self):
        lines = story_lines()
        self.assertGreater(len(lines), 10, lines)
        trees = {}
        for line in lines:
            command = line.split("#", 1)[0].strip()
            if command.startswith("venvtx guard on"):
                trees["before guard"] = tree_hash(self.venv)
            if command.startswith("pip uninstall") and "nvshmem" in command:
                trees["before pip"] = tree_hash(self.venv)
            output = self.say(line)
            if command.startswith("venvtx stamp"):
                trees["stamp"] = tree_hash(self.venv)
            elif command.startswith("pip uninstall") and "nvshmem" in command:
                self.assertFalse(self.imports_torch())
            elif command.startswith("venvtx log"):
                self.assertIn("> recorded     outside", output)
            elif command.startswith("venvtx diff"):
                self.assertIn("lost: libcusparseLt.so.0", output)
                self.assertIn("lost: libnvshmem_host.so.3", output)
            elif command == "venvtx rollback":
                self.assertIn("committed tx 5", output)
                self.assertEqual(trees["before pip"], tree_hash(self.venv))
            elif command.startswith("venvtx guard off"):
                self.assertEqual(trees["before guard"], tree_hash(self.venv))
            elif command.startswith("venvtx remove flash-attn"):
                self.assertIn("committed tx 7", output)
            elif command.startswith("venvtx rollback --to 1"):
                self.assertIn("committed tx 8", output)
                self.assertEqual(trees["stamp"], tree_hash(self.venv))
            elif command.startswith("venvtx status"):
                self.assertIn("no distribution changed", output)
        self.assertTrue(self.imports_torch())


if __name__ == "__main__":
    unittest.main()
