"""Session-wide fixtures for the matcher core tests: the full dataset matcher is built
once per session and its compiled shards are cached under .cache/matcher-test, so later
runs load them instead of compiling every pattern again.

The dataset's files are found through ``tests.datasets``: on a clone without the full
dataset the tests that need it skip with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec
from tests.datasets import ALL_RECORDS, EVAL_PUBLIC, dataset_path, requires_dataset

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "matcher-test"

needs_data = requires_dataset(ALL_RECORDS)


def load_records() -> list[dict]:
    with dataset_path(ALL_RECORDS).open(encoding="utf-8") as fh:
        return [json.loads(line)["record"] for line in fh if line.strip()]


@pytest.fixture(scope="session")
def records() -> list[dict]:
    return load_records()


@pytest.fixture(scope="session")
def full_matcher(records: list[dict]) -> Matcher:
    specs = [PatternSpec(r["id"], r["messagePattern"], r["errorMessage"]) for r in records]
    CACHE.mkdir(parents=True, exist_ok=True)
    return Matcher.build(specs, cache_dir=CACHE)


@pytest.fixture(scope="session")
def eval_cases() -> list[dict]:
    with dataset_path(EVAL_PUBLIC).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
