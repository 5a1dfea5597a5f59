"""Property tests: the normaliser never raises and its offsets always make sense.

Examples: 200 per property in the suite; ``HYPOTHESIS_PROFILE=long`` runs 5,000 each (a
pre-release run); ``HYPOTHESIS_PROFILE=fuzz`` (``make fuzz``) the normaliser's share of
the 10^5-example budget (``tests/fuzz_budget.py``).
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from kb.engine.normalise import normalise, prefix_info, strip_prefix
from tests import fuzz_budget

_LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROPS = fuzz_budget.prop(
    "normaliser",
    default=5_000 if _LONG else 200,
    suppress_health_check=list(HealthCheck) if _LONG else [HealthCheck.too_slow],
)

# Fragments that exercise every pass, glued together in random orders.
FRAGMENTS = [
    "\x1b[31m",
    "\x1b[0m",
    "\x1b]8;;http://x\x07",
    "\x1b",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "\x00",
    "\t",
    "\u00a0",
    "\u2018",
    "\u201d",
    "\u2014",
    "\u2026",
    "\u200b",
    "```",
    "```python\n",
    "> ",
    "<pre>",
    "&quot;",
    "&#39;",
    "&lt;",
    '{"level":"error","msg":"',
    '"}',
    '\\"',
    "\\n",
    "\\u201c",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\u001b[31m",
    "\\",
    '"',
    "2024-01-26T05:40:23.291957186Z  WARN a::b: ",
    "[2024-01-01 12:00:00,123] ERROR [c] ",
    "E1120 12:00:00.123456    1495 f.go:12] ",
    "Jan 10 07:55:33 host k3s[820]: ",
    "Traceback (most recent call last):\n",
    '  File "x.py", line 1, in f\n',
    "ValueError: bad value",
    "During handling of the above exception, another exception occurred:\n",
    "Caused by: a.b.FooException: boom\n",
    "\tat a.b.C(D.java:1)\n",
    "thread 'main' panicked at src/x.rs:1:2:\n",
    "panic: oh no\n",
    "goroutine 1 [running]:\n",
    "Caused by:\n    0: inner\n",
    "Foo {\n",
    "    a: 1,\n",
    "}",
    "['a',\n 'b']",
    "x" * 79,
    "word ",
    "Failed to connect to meta server",
]

texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=30).map("".join),
)


@PROPS
@given(texts)
def test_normalise_never_raises_and_returns_text(text):
    n = normalise(text)
    assert isinstance(n.text, str)
    assert n.original is text
    assert all(isinstance(s, str) for s in n.steps)
    assert not any("normalisation failed" in s for s in n.steps), n.steps


@PROPS
@given(texts, st.data())
def test_to_original_spans_are_within_bounds_and_ordered(text, data):
    n = normalise(text)
    size = len(n.text)
    a = data.draw(st.integers(-5, size + 5))
    b = data.draw(st.integers(-5, size + 5))
    s, e = n.to_original(min(a, b), max(a, b))
    assert 0 <= s <= e <= len(text)


@PROPS
@given(texts, st.data())
def test_to_original_is_monotonic_within_a_logical_line(text, data):
    n = normalise(text)
    size = len(n.text)
    p = data.draw(st.integers(0, size))
    ls, le = n.line_bounds(p, p)
    xs = sorted(data.draw(st.lists(st.integers(ls, le), min_size=2, max_size=6)))
    mapped = [n.to_original(x, x)[0] for x in xs]
    assert mapped == sorted(mapped)
    # a wider span of the line never maps to a narrower original range
    s1, e1 = n.to_original(xs[0], xs[-1])
    s2, e2 = n.to_original(xs[0], xs[-1] if xs[-1] == xs[0] else xs[-1] - 1)
    assert s1 <= s2
    assert e2 <= e1


@PROPS
@given(texts)
def test_mapped_lines_round_trip_for_copied_text(text):
    """A pasted line that was only copied maps back to the identical original text."""
    n = normalise(text)
    for li in n.lines[:50]:
        assert 0 <= li.orig_start <= li.orig_end <= len(text)
        assert 1 <= li.line <= max(1, len(text.splitlines()) + 1)
        assert li.start <= li.body_start <= li.end
        if li.derived is None and n.identity:
            assert n.text[li.start : li.end] == text[li.orig_start : li.orig_end]


identity_texts = st.text(
    alphabet=st.characters(
        codec="ascii",
        exclude_characters="\r\x1b\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f"
        '\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1c\x1d\x1e\x1f\x7f\\"{`>&<~',
    ),
    max_size=300,
)


@PROPS
@given(identity_texts)
def test_text_without_anything_to_normalise_is_left_identical(text):
    n = normalise(text)
    if n.identity:
        assert n.text == text
        assert n.to_original(0, len(text)) == (0, len(text))
    else:
        # only inserted variant lines; every pasted line is still there, in order
        assert all(line in n.text.split("\n") for line in text.split("\n"))


@PROPS
@given(texts, st.integers(-3, 400))
def test_line_of_is_in_range_and_non_decreasing(text, off):
    n = normalise(text)
    nlines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    a = n.line_of(off)
    b = n.line_of(off + 1)
    assert 1 <= a <= b <= nlines


@PROPS
@given(st.text(max_size=200))
def test_strip_prefix_is_within_the_line(line):
    k = strip_prefix(line)
    assert 0 <= k <= len(line)
    assert prefix_info(line)[0] == k


@PROPS
@given(texts, st.data())
def test_line_info_never_fails_and_points_inside_its_line(text, data):
    n = normalise(text)
    off = data.draw(st.integers(0, len(n.text)))
    li = n.line_info(off)
    assert li.start <= off <= max(li.end, off)
    assert li.start <= li.end
    assert li.kind in {"exception", "caused_by", "frame", "log", "text"}


ansi_texts = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "\x1b[31m",
                "\x1b[0m",
                "\x1b[1;32m",
                "\x1b]8;;http://x\x07",
                "\x1b]0;title\x1b\\",
                "\x1b",
                "\x1b(B",
                "\r\n",
                "\x00",
                "\x7f",
                "\n",
            ]
        ),
        st.text(alphabet="abc xyz:0123", max_size=12),
    ),
    max_size=40,
).map("".join)


@PROPS
@given(ansi_texts)
def test_every_copied_character_maps_back_to_the_same_character(text):
    """After stripping escapes and controls, each pasted character maps to itself."""
    n = normalise(text)
    for li in n.lines:
        if li.derived is not None:
            continue
        for i in range(li.start, li.end):
            s, e = n.to_original(i, i + 1)
            assert n.original[s:e] == n.text[i], (i, s, e)


@PROPS
@given(ansi_texts, st.integers(1, 16))
def test_chunked_deletion_maps_like_a_single_pass(text, chunk):
    """Deletion passes cut big texts into chunks; tiny chunks must give the same result."""
    from kb.engine.normalise import _mapping

    whole = normalise(text)
    saved = _mapping.CHUNK
    _mapping.CHUNK = chunk
    try:
        chunked = normalise(text)
    finally:
        _mapping.CHUNK = saved
    assert chunked.text == whole.text
    for i in range(len(whole.text) + 1):
        assert chunked.to_original(i, i) == whole.to_original(i, i)
        assert chunked.to_original(i, i + 1) == whole.to_original(i, i + 1)


_REGION_LINES = [
    "2026-11-30T01:00:00.000Z  INFO app::module: heartbeat ok id=1",
    "2026-11-30T01:00:01.000Z ERROR app::module: connection refused by peer 10.0.0.1",
    'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n    foo()\n'
    "ValueError: bad thing happened here",
    '{"level":"error","msg":"connection refused by \\"peer\\" now"}',
    "\x1b[31mERROR\x1b[0m colour line",
    "a very long unprefixed line that goes on and on and on and on and on and on and on\n"
    "continued here",
    "thread 'main' panicked at src/main.rs:2:5:\ncalled `Option::unwrap()` on a `None` value",
    "quote \u201cthis\u201d and dash \u2014 here, données",
    "crlf line\r\nnext",
    "&lt;tag&gt; entity <br> and <PRE>x</pre>",
    "```\ncode fence\n```",
    "> quoted",
    "Caused by: java.io.IOException: broken pipe\n\tat a.b.C.d(C.java:1)",
]


@pytest.mark.parametrize("seed", range(6))
def test_whole_log_regions_equal_normalising_everything(monkeypatch, seed: int) -> None:
    """A whole log is normalised only around triggers (_regions.py); the result must be
    the one normalising all of it gives: same text, same mapping, same line kinds."""
    from kb.engine.normalise import _normalise, _structure

    monkeypatch.setattr(_structure, "BIG_TEXT", 2_000)
    rng = random.Random(seed)
    plain = _REGION_LINES[0]
    lines = [plain] * 400
    for _ in range(rng.randint(0, 12)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(_REGION_LINES))
    if seed == 0:
        lines[0] = "> a quote marker on line 0"
    text = "\n".join(lines)
    regional = normalise(text)
    full = _normalise(text)
    assert regional.text == full.text
    t = regional.text
    pos = 0
    while pos <= len(t):
        end = t.find("\n", pos)
        end = len(t) if end < 0 else end
        assert regional.to_original(pos, end) == full.to_original(pos, end)
        a, b = regional.line_info(pos), full.line_info(pos)
        assert (a.kind, a.line, a.level, a.body_start, a.derived) == (
            b.kind, b.line, b.level, b.body_start, b.derived,
        )  # fmt: skip
        pos = end + 1


_PLAIN = "2026-11-30T01:00:00.000Z  INFO app::module: heartbeat ok id=1\n" * 40


@PROPS
@given(st.lists(texts, min_size=1, max_size=4))
def test_whole_log_regions_never_miss_a_trigger(chunks):
    """Fragments of every pass, dropped between plain log lines: the regional whole-log
    normalisation gives exactly the text of normalising everything."""
    from kb.engine.normalise import _normalise, _structure

    text = _PLAIN + _PLAIN.join(chunks) + "\n" + _PLAIN
    old = _structure.BIG_TEXT
    _structure.BIG_TEXT = 1_000  # hypothesis: no monkeypatch fixture per example
    try:
        regional = normalise(text)
        full = _normalise(text)
    finally:
        _structure.BIG_TEXT = old
    assert regional.text == full.text
    for p in range(0, len(regional.text), 97):
        assert regional.to_original(p, p + 5) == full.to_original(p, p + 5)


_MARKUP = ["`", "```", "````", "~~~", ">", "> ", ">>", "\n", " ", "\t", "py", "x.", "&amp;"]
markup = st.lists(st.sampled_from(_MARKUP), max_size=24).map("".join)


@PROPS
@given(st.one_of(markup, texts))
def test_markup_patterns_find_on_their_lines_what_they_find_in_the_whole_text(text):
    """Fences and quote markers are searched on the lines that can hold them only
    (`_clean._on_lines`): the same matches as searching the whole text."""
    from kb.engine.normalise import _clean

    ticks = _clean._lines_holding(text, "```")
    fenced = sorted({*ticks, *_clean._lines_holding(text, "~~~")})
    quoted = _clean.lines_opening(text, ">")
    for rx, lines in (
        (_clean._FENCE_LINE_RE, fenced),
        (_clean._FENCE_GLUED_RE, ticks),
        (_clean._QUOTE_RE, quoted),
    ):
        whole = [m.span() for m in rx.finditer(text)]
        assert [m.span() for m in _clean._on_lines(rx, text, lines)] == whole
