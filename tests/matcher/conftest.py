"""Session-wide fixtures for the matcher core tests: the full dataset matcher is built
once per session and its compiled shards are cached under .cache/matcher-test, so later
runs load them (milliseconds) instead of compiling (tens of seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kb.matcher import Matcher, PatternSpec

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("KB_SHARED_DATA", ROOT.parent / "shared" / "data"))
RECORDS = DATA / "records-all.jsonl"
EVAL = DATA / "eval-public.jsonl"
CACHE = ROOT / ".cache" / "matcher-test"

needs_data = pytest.mark.skipif(not RECORDS.exists(), reason=f"no dataset at {DATA}")


def load_records() -> list[dict]:
    with RECORDS.open(encoding="utf-8") as fh:
        return [json.loads(line)["record"] for line in fh if line.strip()]


@pytest.fixture(scope="session")
def records() -> list[dict]:
    if not RECORDS.exists():
        pytest.skip(f"no dataset at {DATA}")
    return load_records()


@pytest.fixture(scope="session")
def full_matcher(records: list[dict]) -> Matcher:
    specs = [PatternSpec(r["id"], r["messagePattern"], r["errorMessage"]) for r in records]
    CACHE.mkdir(parents=True, exist_ok=True)
    return Matcher.build(specs, cache_dir=CACHE)


@pytest.fixture(scope="session")
def eval_cases() -> list[dict]:
    if not EVAL.exists():
        pytest.skip(f"no eval set at {DATA}")
    with EVAL.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
