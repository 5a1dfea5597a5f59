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

from kb.engine import Matcher, PatternSpec, candidates, logstream, matcher
from kb.engine.normalise import _structure
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


@pytest.fixture
def small_log(monkeypatch):
    """Logs of a few kB or MB read as whole logs, in blocks of a few hundred lines."""
    monkeypatch.setattr(_structure, "BIG_TEXT", 2_000)
    monkeypatch.setattr(matcher, "BIG_TEXT_CHARS", 2_000)
    monkeypatch.setattr(matcher, "WHOLE_LOG_CHARS", 2_000)
    monkeypatch.setattr(logstream, "PENDING_LINES", 4 * logstream.AFTER_LINES)
    # the confirm step's time budget would make the two sides differ on a loaded machine
    monkeypatch.setattr(candidates, "CONFIRM_BUDGET_S", 600.0)
