"""pytest fixtures of the Ansible tests."""
import os
import subprocess

import pytest

from ansible_support import story_template


@pytest.fixture
def venv(tmp_path):
    """A private copy of the story venv (torch + nvidia-*-cu13 + sglang, flash-attn...)."""
    path = tmp_path / "venv"
    subprocess.run(["cp", "-a", os.path.join(story_template(), "venv"), str(path)], check=True)
    return str(path)
