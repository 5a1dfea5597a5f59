"""Where the full dataset is, for the tests that need it.

The repository carries a small curated sample in ``fixtures/``; the full dataset (every
extracted record, the enriched records, the labelled pastes) is too big to live in it. Tests
that need it ask here, and skip with a one-line reason when it is not present, so a bare
clone runs the whole suite. ``KB_DATASET_DIR`` points at the dataset directory; by default it
is the ``shared/data`` folder beside the clone, where CI lays it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")

ALL_RECORDS = "records-all.jsonl"
ENRICHED = "records-enriched.jsonl"
EVAL_PUBLIC = "eval-public.jsonl"


def _reason(name: str) -> str:
    return f"needs {name} from the full dataset (set KB_DATASET_DIR)"


def has_dataset(name: str) -> bool:
    return (DATASET_DIR / name).is_file()


def dataset_path(name: str) -> Path:
    """The file's path; skips the calling test when the dataset is not there."""
    path = DATASET_DIR / name
    if not path.is_file():
        pytest.skip(_reason(name))
    return path


def requires_dataset(name: str) -> pytest.MarkDecorator:
    """A marker for tests (or modules, as ``pytestmark``) that read ``name``."""
    return pytest.mark.skipif(not has_dataset(name), reason=_reason(name))
