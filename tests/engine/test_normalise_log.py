"""`normalise_log`: a whole log's collector envelopes are removed around the lines that
matter (error lines, structure behind an envelope), wherever in the log they are, at a
cost that follows those lines, not the log's length."""

from __future__ import annotations

import random

import pytest

from kb.engine import candidates, matcher
from kb.engine.normalise import _envelopes, _structure, normalise, normalise_log
from kb.engine.normalise._envelopes import envelopes_in_sample
from kb.records.validation import render_message

from .conftest import needs_data
from .envelopes import KUBECTL_PREFIX, MIXED_KINDS, mixed_line

PLAIN = "2026-11-30T01:00:00.000Z  INFO app::module: heartbeat ok id=1"
TRACE = [
    "2026-11-30T01:00:01.000Z ERROR app::module: request failed",
    "java.lang.IllegalStateException: pool exhausted",
    "\tat com.example.Pool.take(Pool.java:42)",
    "\tat com.example.Api.handle(Api.java:7)",
]


@pytest.fixture
def big(monkeypatch):
    monkeypatch.setattr(_structure, "BIG_TEXT", 2_000)


def _log(quiet_before: int, quiet_after: int) -> str:
    lines = [PLAIN] * quiet_before  # the log's start holds no envelope
    lines += (
        [KUBECTL_PREFIX + PLAIN] * 50
        + [KUBECTL_PREFIX + x for x in TRACE]
        + [KUBECTL_PREFIX + PLAIN] * quiet_after
    )
    return "\n".join(lines) + "\n"


def test_envelope_far_from_the_start_is_removed_around_an_error(big) -> None:
    text = _log(5000, 50)  # past the sample `normalise` judges a log by
    norm = normalise_log(text)
    for line in TRACE:
        assert f"\n{line}\n" in norm.text  # the traceback reads as the application wrote it
    start = norm.text.index("\tat com.example.Pool")
    info = norm.line_info(start)
    assert info.kind == "frame"
    os_, oe = norm.to_original(start, start + 4)
    assert text[os_:oe] == "\tat "
    assert any("kubectl --prefix" in s for s in norm.steps)


def test_envelope_detection_follows_the_flagged_lines_not_the_log(big, monkeypatch) -> None:
    """Envelopes are looked for line by line only in regions around flagged lines: a log
    ten times longer costs no more envelope hits."""
    calls = []
    real = _envelopes._hit
    monkeypatch.setattr(_envelopes, "_hit", lambda m, ls: calls.append(ls) or real(m, ls))
    counts = []
    for after in (200, 2000):
        calls.clear()
        normalise_log(_log(100, after))
        counts.append(len(calls))
    assert 0 < counts[1] <= counts[0] < 200


def _mixed_log(records: list[dict], lines: int) -> str:
    """1 error line in 100 (a record's message, rendered), in runs of plain, kubectl
    --prefix, journald and JSON lines, far past the start a log is judged by."""
    rng = random.Random(5)
    out = []
    for i in range(lines):
        kind = MIXED_KINDS[(i // 700) % 4]
        if i % 100 == 50:
            level, msg = "ERROR", render_message(rng.choice(records)["errorMessage"], "42")
        else:
            level, msg = "INFO", f"heartbeat ok id={i}"
        out.append(mixed_line(kind, i, level, msg))
    return "\n".join(out) + "\n"


@needs_data
@pytest.mark.slow
def test_whole_mixed_log_matches_as_normalising_all_of_it(full_matcher, records) -> None:
    """On a real mixed log whose start holds envelopes (so `normalise` removes them from
    every line), removing them only around flagged lines finds the same: every match
    (record, line, span, text, score), group and answer, in the same order."""
    text = _mixed_log(records, 60_000)
    assert len(text) > _structure.BIG_TEXT
    assert envelopes_in_sample(text)
    with pytest.MonkeyPatch.context() as mp:
        # the confirm step's time budget would make the two sides differ on a loaded machine
        mp.setattr(candidates, "CONFIRM_BUDGET_S", 600.0)
        mp.setattr(full_matcher, "excerpt_logs", False)  # the log's regions, not an excerpt's
        new = full_matcher.match(text)
        mp.setattr(
            matcher,
            "normalise_log",
            lambda t, encoded=None, size=None: normalise(t, encoded=encoded),
        )
        old = full_matcher.match(text)
    assert new.normalised.text != old.normalised.text  # envelopes left on quiet lines
    assert len(new.matches) > 100

    def matches(r):
        return [(m.key, m.line, m.span, m.text, round(m.score, 6)) for m in r.matches]

    assert matches(new) == matches(old)
    assert new.groups == old.groups
    assert [(a.key, a.first_line, a.order, a.cause) for a in new.answers] == [
        (a.key, a.first_line, a.order, a.cause) for a in old.answers
    ]
