"""Small real git repositories built inside a test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["GitRepo"]


class GitRepo:
    """A git repository in ``path``, committed to by the test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, env=env, check=True
        )
        return done.stdout.decode().strip()

    def write(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str, tag: str | None = None) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        if tag:
            self.git("tag", tag)
        return self.git("rev-parse", "HEAD")
