"""The matcher's acceptance figures, computed through the public interface on
eval-public.jsonl (real pastes). Marked slow: it uses the full dataset's matcher."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pytest

from kb.engine import Matcher, RecordFacts

pytestmark = pytest.mark.slow

EXACT_TOP1 = 0.97
DRIFTED_TOP3 = 0.60


def _acceptable(case: dict, by_id: dict[str, dict]) -> set[str]:
    keys = set(case["expected"]) | set(case.get("also_acceptable") or [])
    patterns = {by_id[k]["messagePattern"] for k in keys if k in by_id}
    # records with the identical pattern count as the same answer
    return keys | {k for k, r in by_id.items() if r["messagePattern"] in patterns}


@pytest.fixture(scope="module")
def outcomes(full_matcher: Matcher, eval_cases: list[dict], records: list[dict]) -> dict:
    by_id = {r["id"]: r for r in records}
    out: dict[str, list[tuple[str, bool]]] = {}
    for case in eval_cases:
        rep = full_matcher.match(case["text"])
        ok_keys = _acceptable(case, by_id)
        stratum = case["stratum"]
        if stratum == "exact":
            ok = bool(rep.matches) and rep.matches[0].key in ok_keys
        elif stratum in ("negative", "absent"):
            ok = not rep.matches
        else:
            ranked = [m.key for m in rep.matches] + [s.key for s in rep.suggestions]
            ok = any(k in ok_keys for k in ranked[:3])
        out.setdefault(stratum, []).append((case["id"], ok))
    return out


def _rate(rows: list[tuple[str, bool]]) -> float:
    return sum(ok for _, ok in rows) / len(rows)


def test_exact_top1(outcomes: dict) -> None:
    rows = outcomes["exact"]
    failed = [cid for cid, ok in rows if not ok]
    assert _rate(rows) >= EXACT_TOP1, f"top-1 {_rate(rows):.3f}; wrong: {failed}"


def test_negative_has_no_matches(outcomes: dict) -> None:
    failed = [cid for cid, ok in outcomes["negative"] if not ok]
    assert failed == [], f"matches reported on negative cases: {failed}"


def test_absent_mostly_has_no_matches(outcomes: dict) -> None:
    # The issue demands no matches on `negative`; `absent` cases may contain real
    # dataset messages as wrappers, so allow one in ten (currently 1 of 20 fails).
    rows = outcomes["absent"]
    failed = [cid for cid, ok in rows if not ok]
    assert len(failed) <= len(rows) // 10, f"matches reported on absent cases: {failed}"


def test_drifted_top3(outcomes: dict) -> None:
    rows = outcomes.get("drifted", [])
    if not rows:
        pytest.skip("no drifted cases")
    assert _rate(rows) >= DRIFTED_TOP3, [cid for cid, ok in rows if not ok]


EXTRA_CARDS = 0.03  # share of positives showing a confident card for an error not pasted


@pytest.fixture(scope="module")
def answered(full_matcher: Matcher, eval_cases: list[dict], records: list[dict]) -> list:
    """Every case matched as the site matches it: with the records' facts, so that the
    paste's own context chooses between records."""
    by_id = {r["id"]: r for r in records}
    repos = {r["repo"] for r in records}

    def facts(keys: Iterable[str]) -> dict[str, RecordFacts]:
        return {
            k: RecordFacts(r["repo"], r["filePath"], r["errorClass"] or "", r["lineNumber"])
            for k in keys
            if (r := by_id.get(k)) is not None
        }

    return [
        (case, _acceptable(case, by_id), full_matcher.match(case["text"], facts=facts, repos=repos))
        for case in eval_cases
    ]


def test_each_piece_of_text_is_one_card(answered: list) -> None:
    overlapping = []
    for case, _ok, rep in answered:
        spans = sorted(a.match.span for a in rep.answers)
        if any(x[1] > y[0] for x, y in itertools.pairwise(spans)):
            overlapping.append(case["id"])
    assert overlapping == []


def test_the_pastes_context_keeps_top1(answered: list) -> None:
    exact = [(c, ok, rep) for c, ok, rep in answered if c["stratum"] == "exact"]
    right = sum(bool(rep.matches) and rep.matches[0].key in ok for _c, ok, rep in exact)
    assert right / len(exact) >= EXACT_TOP1


def test_few_positives_show_a_card_for_an_error_not_pasted(answered: list) -> None:
    positives = [(c, ok, rep) for c, ok, rep in answered if c["stratum"] in ("exact", "drifted")]
    extra = [
        c["id"]
        for c, ok, rep in positives
        if any(a.key not in ok and not set(a.match.same_message) & ok for a in rep.answers)
    ]
    assert len(extra) / len(positives) <= EXTRA_CARDS, extra
