"""Where the benchmarks find what the repository does not hold: the dataset and the git
mirrors of the repositories it was read from.

Each is named by an environment variable (``KB_DATASET_DIR``, ``KB_MIRRORS_DIR``), else
looked for beside the clone's parent (a worktree in a folder of worktrees), else beside
the clone. A benchmark that needs one and does not find it skips with its reason.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _found(variable: str, *candidates: Path) -> Path:
    named = os.environ.get(variable)
    if named:
        return Path(named)
    return next((p for p in candidates if p.is_dir()), candidates[-1])


MIRRORS_DIR = _found("KB_MIRRORS_DIR", REPO.parent.parent / ".mirror", REPO.parent / ".mirror")
DATASET_DIR = _found(
    "KB_DATASET_DIR", REPO.parent / "shared/data", REPO.parent.parent / "shared/data"
)


def mirror(repo: str) -> Path:
    """The bare git mirror of ``owner/name`` (``owner+name/repo`` under ``MIRRORS_DIR``)."""
    return MIRRORS_DIR / repo.replace("/", "+") / "repo"
