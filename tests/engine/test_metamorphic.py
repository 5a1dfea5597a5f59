"""Metamorphic test: the `exact` cases dressed up the way real logs arrive
(timestamps and levels prepended, ANSI colours, JSON log lines, CRLF line ends, hard
wrap at 80 columns) must keep their top-1 within 2 points of the plain cases."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from kb.engine import Matcher

pytestmark = pytest.mark.slow

MAX_DROP = 0.02


def _lines(text: str) -> list[str]:
    return text.split("\n")


def with_prefix(text: str) -> str:
    return "\n".join(
        f"2026-11-30T01:{i // 60 % 60:02d}:{i % 60:02d}.{i:03d}Z ERROR app.module: {line}"
        for i, line in enumerate(_lines(text))
    )


def with_ansi(text: str) -> str:
    out = []
    for line in _lines(text):
        head, _, rest = line.partition(" ")
        out.append(f"\x1b[1;31m{head}\x1b[0m {rest}" if rest else f"\x1b[33m{line}\x1b[0m")
    return "\n".join(out)


def as_json_lines(text: str) -> str:
    return "\n".join(
        json.dumps({"ts": "2026-11-30T01:00:00Z", "level": "error", "msg": line})
        for line in _lines(text)
    )


def with_crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def hard_wrap_80(text: str) -> str:
    out = []
    for line in _lines(text):
        out.extend(line[i : i + 80] for i in range(0, max(len(line), 1), 80))
    return "\n".join(out)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "prefix": with_prefix,
    "ansi": with_ansi,
    "json": as_json_lines,
    "crlf": with_crlf,
    "wrap80": hard_wrap_80,
}
XFAIL: dict[str, str] = {}  # transform -> reason, for gaps owned by another module


def _top1(matcher: Matcher, cases: list[dict], ok: dict[str, set[str]], f) -> float:
    good = 0
    for case in cases:
        rep = matcher.match(f(case["text"]))
        good += bool(rep.matches) and rep.matches[0].key in ok[case["id"]]
    return good / len(cases)


@pytest.fixture(scope="module")
def exact_cases(eval_cases: list[dict], records: list[dict]) -> tuple[list[dict], dict]:
    by_pattern: dict[str, set[str]] = {}
    for r in records:
        by_pattern.setdefault(r["messagePattern"], set()).add(r["id"])
    pat = {r["id"]: r["messagePattern"] for r in records}
    cases = [c for c in eval_cases if c["stratum"] == "exact"]
    ok = {}
    for c in cases:
        keys = set(c["expected"]) | set(c.get("also_acceptable") or [])
        ok[c["id"]] = set().union(*(by_pattern[pat[k]] for k in keys if k in pat)) | keys
    return cases, ok


@pytest.fixture(scope="module")
def baseline(full_matcher: Matcher, exact_cases: tuple[list[dict], dict]) -> float:
    cases, ok = exact_cases
    return _top1(full_matcher, cases, ok, lambda t: t)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=XFAIL[n], strict=False)) if n in XFAIL else n
        for n in TRANSFORMS
    ],
)
def test_top1_survives_transform(
    name: str, full_matcher: Matcher, exact_cases: tuple[list[dict], dict], baseline: float
) -> None:
    cases, ok = exact_cases
    got = _top1(full_matcher, cases, ok, TRANSFORMS[name])
    assert got >= baseline - MAX_DROP, f"{name}: top-1 {got:.3f} vs plain {baseline:.3f}"
