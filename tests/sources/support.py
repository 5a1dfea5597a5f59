"""Small real git repositories built inside a test, and whether extraction is merged."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from kb.extract.extract import extract_file

__all__ = ["GitRepo", "needs_extraction"]

PROBE = b'def f():\n    raise ValueError("a message long enough to be a record")\n'


def _missing_extraction() -> str | None:
    """Why learning cannot find sites on this tree yet, or ``None``."""
    for module in ("kb.extract.records", "kb.extract.identity"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not merged yet (the records helper's part of issue 25)"
    if not extract_file("probe.py", PROBE):
        return "the Python extractor finds no `raise` yet (the xpy helper's part of issue 25)"
    return None


_MISSING = _missing_extraction()
#: Learning end to end needs the record builder and the Python extractor.
needs_extraction = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


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
