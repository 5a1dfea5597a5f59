"""`normalise_log`: a whole log's collector envelopes are removed around the lines that
matter (error lines, structure behind an envelope), wherever in the log they are, at a
cost that follows those lines, not the log's length."""

from __future__ import annotations

import pytest

from kb.engine.normalise import _envelopes, _structure, normalise_log

PLAIN = "2026-11-30T01:00:00.000Z  INFO app::module: heartbeat ok id=1"
POD = "[pod/api-7d9f8b-x2k4q/app] "
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
    lines += [POD + PLAIN] * 50 + [POD + x for x in TRACE] + [POD + PLAIN] * quiet_after
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
