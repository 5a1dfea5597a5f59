"""The public labelled set passed through every envelope keeps its top-1 within one point
of the clean set: an envelope must cost the user nothing the clean paste would have given.
Marked slow: it uses the full dataset's matcher."""

from __future__ import annotations

import pytest

from kb.engine import Matcher
from tests.engine.envelopes import NAMES, wrap

pytestmark = pytest.mark.slow

TOLERANCE = 0.01


def _acceptable(case: dict, by_id: dict[str, dict]) -> set[str]:
    keys = set(case["expected"]) | set(case.get("also_acceptable") or [])
    patterns = {by_id[k]["messagePattern"] for k in keys if k in by_id}
    return keys | {k for k, r in by_id.items() if r["messagePattern"] in patterns}


def top1(matcher: Matcher, cases: list[dict], by_id: dict[str, dict], name: str | None) -> float:
    """Share of the exact cases whose first match is an acceptable record."""
    hits = 0
    for case in cases:
        text = case["text"] if name is None else wrap(case["text"], name)
        rep = matcher.match(text)
        hits += bool(rep.matches) and rep.matches[0].key in _acceptable(case, by_id)
    return hits / len(cases)


@pytest.fixture(scope="module")
def exact(eval_cases: list[dict]) -> list[dict]:
    return [c for c in eval_cases if c["stratum"] == "exact"]


@pytest.fixture(scope="module")
def by_id(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records}


@pytest.fixture(scope="module")
def clean_top1(full_matcher: Matcher, exact: list[dict], by_id: dict[str, dict]) -> float:
    return top1(full_matcher, exact, by_id, None)


@pytest.mark.parametrize("name", NAMES)
def test_envelope_keeps_top1_within_a_point_of_the_clean_set(
    name: str, full_matcher: Matcher, exact: list[dict], by_id: dict[str, dict], clean_top1: float
) -> None:
    got = top1(full_matcher, exact, by_id, name)
    print(f"{name}: top-1 {got:.3f} (clean {clean_top1:.3f})")
    assert got >= clean_top1 - TOLERANCE, f"{name}: {got:.3f} vs clean {clean_top1:.3f}"
