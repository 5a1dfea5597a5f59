"""Property tests of `Matcher.match` over hostile text: it never raises (except
`PasteTooLarge`, exactly past ``max_bytes``), and every report is consistent with the text
it was made from and with what `kb/engine/types.py` and `report.py` document.

The matcher is the demo records' (``fixtures/demo-records.jsonl``) plus a few opaque and
catastrophic hand-made patterns, built once per session and cached under
``.cache/matcher-test`` (compiled once, loaded on later runs). Texts: arbitrary unicode; real
error messages of the records, whole or in pieces, glued with log noise (timestamps,
levels, ANSI codes, JSON log lines, CRLF, tracebacks, 80-column wraps); ReDoS bait
(``a``*n + ``!``, 20k spaces, ``x=``*n); NULs and lone surrogates.

Examples: a few hundred per property in the suite; under ``HYPOTHESIS_PROFILE=fuzz`` the
matcher's share of ``tests/fuzz_budget.py``.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import string
import textwrap
from functools import cache
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st

from kb.engine import Match, Matcher, MatchReport, PasteTooLarge, PatternSpec
from kb.engine.patterns import GENERIC_LITERAL_CHARS
from kb.engine.rank import INFO_FACTOR, KIND_FACTOR, MIN_COVERAGE
from kb.records.validation import SAMPLE_VALUES, render_message
from tests import fuzz_budget
from tests.engine.conftest import CACHE

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo-records.jsonl"

# Opaque (non-template) and catastrophic patterns beside the demo's templates: the bait
# below is aimed at them (the ReDoS rows of tests/engine/test_redos.py).
EXTRA_SPECS = [
    PatternSpec("opaque-digits", r"\d+ errors? in [a-z_]+ module loading", ""),
    PatternSpec("opaque-class", r"segment [0-9a-f]{8} is (?:corrupt|missing) on disk", ""),
    PatternSpec("evil-nested", r"(a+)+b", ""),
    PatternSpec("evil-eq", r".*(?:.*=.*)", ""),
    PatternSpec("evil-trim", r"^[\s\u200c]+|[\s\u200c]+$", ""),
    PatternSpec("evil-words", r"^(\w+\s?)*$", ""),
]


@cache
def demo_records() -> tuple[dict, ...]:
    with DEMO.open(encoding="utf-8") as fh:
        return tuple(json.loads(line)["record"] for line in fh if line.strip())


@cache
def specs() -> tuple[PatternSpec, ...]:
    demo = [PatternSpec(r["id"], r["messagePattern"], r["errorMessage"]) for r in demo_records()]
    return (*demo, *EXTRA_SPECS)


@cache
def matcher() -> Matcher:
    """Built once per process (and loaded from the shared cache on later runs)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return Matcher.build(list(specs()), cache_dir=CACHE)


@cache
def findable() -> tuple[dict, ...]:
    """Demo records the matcher can be confident about: admitted and not generic (a
    generic pattern goes to suggestions by design). All but 4 of the 473."""
    m = matcher()
    out = []
    for r in demo_records():
        adm = m.admission(r["id"])
        if adm.ok and not adm.generic:
            out.append(r)
    return tuple(out)


@cache
def patterns_by_key() -> dict[str, str]:
    return {s.key: s.pattern for s in specs()}


@cache
def keys_by_pattern() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for s in specs():
        out.setdefault(s.pattern, set()).add(s.key)
    return {p: frozenset(ks) for p, ks in out.items()}


@cache
def compiled(pattern: str) -> regex.Pattern[str]:
    return regex.compile(pattern, regex.VERSION0)


@cache
def messages() -> tuple[str, ...]:
    return tuple(render_message(r["errorMessage"], "x1") for r in demo_records())


# --------------------------------------------------------------------------- strategies
PREFIXES = [
    "2024-01-26T05:40:23.291957186Z ERROR app::module: ",
    "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: ",
    "2024-01-26T05:40:23Z  INFO ",
    "[2024-01-01 12:00:00,123] ERROR [c] ",
    "E1120 12:00:00.123456    1495 f.go:12] ",
    "Jan 10 07:55:33 host k3s[820]: ",
    "ERROR: ",
    "DEBUG ",
    "\x1b[31mERROR\x1b[0m ",
    "> ",
    "    ",
]
NOISE = [
    "\x1b[31m",
    "\x1b[0m",
    "\x1b[1;32m",
    "\x1b]8;;http://x\x07",
    "\x1b",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "\x00",
    "\t",
    "\u00a0",
    "\u200b",
    "\u2018",
    "\u201d",
    "\u2014",
    "\u2026",
    "\ud83d",  # lone surrogates: no UTF-8 encoding exists for them
    "\udc00",
    "\udfff",
    "```\n",
    "<pre>",
    "&quot;",
    "&lt;",
    '\\"',
    "\\n",
    "\\u001b[31m",
    "Traceback (most recent call last):\n",
    '  File "x.py", line 1, in f\n    foo()\n',
    "During handling of the above exception, another exception occurred:\n\n",
    "ValueError: ",
    "Caused by: java.io.IOException: ",
    "\tat a.b.C.d(C.java:1)\n",
    "thread 'main' panicked at src/x.rs:1:2:\n",
    "goroutine 1 [running]:\n",
    "Error: {\n    inner: Some(\n        1,\n    ),\n}\n",
    "    at Object.<anonymous> (/srv/app.js:1:2)\n",
    "x" * 79,
    "heartbeat ok id=1 ",
    '{"level":"error","msg":"',
    '"}\n',
]


def _bait(kind: str, n: int) -> str:
    return {
        "a!": "a" * n + "!",
        "spaces": " " * 20_000,
        "spaces-x": " " * 20_000 + "x",
        "x=": "x=" * n,
        "=a": "=" * n + "a",
        "words": "word " * (n // 5) + "!",
        "nested": "(a+)+b " * (n // 25),
        "lines": ("a" * 300 + "b\n") * (n // 300),
        "zwnj": "\u200c" * n + "x",
    }[kind]


bait = st.builds(
    _bait,
    st.sampled_from(["a!", "spaces", "spaces-x", "x=", "=a", "words", "nested", "lines", "zwnj"]),
    st.integers(1, 5_000),
)


@st.composite
def message_piece(draw: st.DrawFn) -> str:
    """A real error message of a record: whole, or a slice of it."""
    msg = draw(st.sampled_from(messages()))
    if draw(st.booleans()):
        return msg
    a = draw(st.integers(0, len(msg)))
    b = draw(st.integers(a, len(msg)))
    return msg[a:b]


def _json_line(level: str, msg: str, ascii_only: bool) -> str:
    return (
        json.dumps(
            {"ts": "2024-01-01T00:00:00Z", "level": level, "msg": msg}, ensure_ascii=ascii_only
        )
        + "\n"
    )


json_line = st.builds(
    _json_line, st.sampled_from(["error", "warn", "info"]), message_piece(), st.booleans()
)
traceback = st.builds(
    lambda exc, msg: (
        'Traceback (most recent call last):\n  File "/srv/app.py", line 12, in main\n'
        f"    run()\n{exc}: {msg}\n"
    ),
    st.sampled_from(["ValueError", "django.core.exceptions.ImproperlyConfigured", "E"]),
    message_piece(),
)
fragment = st.one_of(
    st.sampled_from(NOISE),
    st.sampled_from(PREFIXES),
    message_piece(),
    json_line,
    traceback,
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
)


def _wrap80(text: str) -> str:
    """A terminal's hard wrap: every line cut at 80 columns."""
    return "\n".join(
        line[i : i + 80] or "" for line in text.split("\n") for i in range(0, max(len(line), 1), 80)
    )


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _as_is(text: str) -> str:
    return text


glued = st.builds(
    lambda parts, how: how("".join(parts)),
    st.lists(st.one_of(fragment, fragment, fragment, bait), max_size=24),
    st.sampled_from([_as_is, _wrap80, _crlf, textwrap.dedent]),
)
hostile_text = st.one_of(
    st.text(max_size=400),  # arbitrary unicode
    st.text(alphabet=st.characters(), max_size=200),  # any code point, lone surrogates too
    st.text(alphabet=st.one_of(st.characters(categories=["Cs", "Cc"]), st.just("a")), max_size=50),
    glued,
    glued,
    glued,
    bait,
)


# --------------------------------------------------------------------------- oracles
_NEWLINE = re.compile(r"\r\n|\r|\n")
ORACLE_TIMEOUT_S = 0.2


def line_starts(text: str) -> list[int]:
    """Offsets where lines of `text` start (CRLF, lone CR and LF each end a line)."""
    return [0, *(m.end() for m in _NEWLINE.finditer(text))]


def line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)


def utf8_size(text: str) -> int:
    """Bytes of the paste in UTF-8. A lone surrogate has no UTF-8 form: it counts as the
    one replacement byte the scanner sees in its place."""
    return sum(1 if 0xD800 <= ord(c) <= 0xDFFF else len(c.encode()) for c in text)


def check_exact(report: MatchReport, match: Match, pattern: str) -> None:
    """An exact match is the pattern's own match in the text the matcher scanned (on the
    normalised lines that map back to the span); when normalising changed nothing, that
    is the original text at the span itself. (Python-`re` semantics: the oracle may time
    out on bait, where it says nothing.)"""
    rx = compiled(pattern)
    norm = report.normalised
    s, e = match.span
    try:
        if norm.identity:
            assert rx.fullmatch(match.text, timeout=ORACLE_TIMEOUT_S), (pattern, match.text)
            return
        near = [li for li in norm.lines if li.orig_start <= e and li.orig_end >= s]
        assert near, match
        window = norm.text[min(li.start for li in near) : max(li.end for li in near)]
        assert rx.search(window, timeout=ORACLE_TIMEOUT_S), (pattern, window[:500])
    except TimeoutError:
        pass


def check_report(report: MatchReport, text: str) -> None:
    """Everything a report promises about the text it was made from."""
    m = matcher()
    starts = line_starts(text)
    n_lines = len(starts)
    assert report.normalised.original is text
    assert isinstance(report.elapsed_ms, float)
    assert report.elapsed_ms >= 0
    assert all(isinstance(n, str) for n in report.notes)

    seen: set[str] = set()
    for pos, match in enumerate(report.matches):
        s, e = match.span
        # the span lies within the original text, `text` is exactly the text there, and
        # `line` is the 1-based line of the original on which the span starts
        assert 0 <= s <= e <= len(text), match
        assert match.text == text[s:e]
        assert match.line == line_of(starts, s), (match.line, s)
        assert 1 <= match.line <= n_lines
        assert e > s, match  # a match always reads some text
        assert isinstance(match.captures, list)
        assert all(isinstance(c, str) for c in match.captures)
        # one entry per pattern: the key, plus the other keys of the identical pattern
        keys = {match.key, *match.same_message}
        assert len(keys) == 1 + len(match.same_message)
        assert not keys & seen, "a record is matched twice"
        seen |= keys
        pattern = patterns_by_key()[match.key]
        assert keys == keys_by_pattern()[pattern]
        # confident: admitted, not generic, and the score is what the documents say
        adm = m.admission(match.key)
        assert adm.ok
        assert not adm.generic
        assert match.kind in KIND_FACTOR
        assert GENERIC_LITERAL_CHARS <= match.literal_chars <= adm.specificity
        assert match.score == round(match.literal_chars * KIND_FACTOR[match.kind], 2)
        assert 0 < match.score <= match.literal_chars
        assert match.coverage == round(match.literal_chars / adm.specificity, 4)
        assert MIN_COVERAGE[match.kind] <= match.coverage <= 1
        if match.kind == "exact":
            assert match.coverage == 1
            check_exact(report, match, pattern)
        # the reason says where the match ranks
        assert f"on line {match.line}" in match.reason
        n = len(report.matches)
        if n > 1:
            where = "most specific of" if pos == 0 else f"ranked {pos + 1} of"
            assert f"{where} {n} confident candidates" in match.reason

    # best first: one match per piece of text (each answer's best), then the other
    # readings of those texts; in each part, matches that wrap or are read further by
    # another come last; otherwise by score (a match on an INFO/DEBUG line counts
    # INFO_FACTOR of its score)
    def demoted(match: object) -> tuple[bool, bool, bool]:
        r = match.reason
        return (
            "an alternative reading of the text of a better match" in r,
            "it wraps another matched message" in r,
            "reads more of this line" in r,
        )

    flags = [demoted(x) for x in report.matches]
    assert flags == sorted(flags)
    for i, a in enumerate(report.matches):
        for b in report.matches[i + 1 :]:
            if demoted(a) == demoted(b):
                assert a.score >= INFO_FACTOR * b.score, (a, b)

    sugg_keys = [x.key for x in report.suggestions]
    assert len(sugg_keys) == len(set(sugg_keys))
    assert not set(sugg_keys) & seen, "a matched record is also a suggestion"
    sims = [x.similarity for x in report.suggestions]
    assert sims == sorted(sims, reverse=True)
    for x in report.suggestions:
        assert 0 <= x.similarity <= 1
        assert x.key in patterns_by_key()
        assert isinstance(x.reason, str)
        assert x.reason
        assert x.line is None or 1 <= x.line <= n_lines

    # one answer per piece of text: no two answers' spans overlap; the answers are the
    # best readings among the matches, each other reading lost to one of them
    spans = sorted(a.match.span for a in report.answers)
    assert all(x[1] <= y[0] for x, y in itertools.pairwise(spans)), spans
    best = [x.key for x in report.matches if not demoted(x)[0]]
    assert sorted(a.key for a in report.answers) == sorted(best)
    alternatives = {x.key for a in report.answers for x in a.alternatives}
    assert alternatives == {x.key for x in report.matches if demoted(x)[0]}
    assert all(a.count >= 1 and a.first_line <= a.last_line for a in report.answers)

    group_keys = [g.key for g in report.groups]
    assert len(group_keys) == len(set(group_keys))
    confident = [g.confident for g in report.groups]
    assert confident == sorted(confident, reverse=True)  # confident groups first
    for g in report.groups:
        assert g.count >= 1
        assert 1 <= g.first_line <= g.last_line <= n_lines
        assert g.confident == (g.key in {x.key for x in report.matches})


# --------------------------------------------------------------------------- properties
@fuzz_budget.prop("matcher", default=300, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text, st.one_of(st.none(), st.integers(0, 5_000_000)))
@example("a" * 5_000 + "!", None)
@example(" " * 20_000 + "x", 20_000)
@example("x=" * 2_500, None)
@example("\x00\ud83d\r\n\udfff", None)
def test_prop_match_never_raises_and_its_report_fits_the_text(
    text: str, max_bytes: int | None
) -> None:
    size = utf8_size(text)
    if max_bytes is not None and size > max_bytes:
        with pytest.raises(PasteTooLarge) as info:
            matcher().match(text, max_bytes=max_bytes)
        assert (info.value.size, info.value.limit) == (size, max_bytes)
        return
    check_report(matcher().match(text, max_bytes=max_bytes), text)


@fuzz_budget.prop("matcher", default=100)
@given(hostile_text, st.integers(-4, 4))
def test_prop_paste_too_large_exactly_when_the_utf8_size_exceeds_max_bytes(
    text: str, delta: int
) -> None:
    size = utf8_size(text)
    limit = max(0, size + delta)
    if size > limit:
        with pytest.raises(PasteTooLarge) as info:
            matcher().match(text, max_bytes=limit)
        assert (info.value.size, info.value.limit) == (size, limit)
        assert f"{limit:,} bytes" in str(info.value)
    else:
        check_report(matcher().match(text, max_bytes=limit), text)


value = st.one_of(
    st.sampled_from(SAMPLE_VALUES),
    st.text(alphabet=string.ascii_letters + string.digits + "_-./:", min_size=1, max_size=12),
)
noise_line = st.one_of(
    st.sampled_from(PREFIXES).map(lambda p: p + "heartbeat ok id=1"),
    st.sampled_from(NOISE).map(lambda n: n.replace("\n", " ").replace("\r", " ")),
    st.text(alphabet=string.printable.replace("\n", "").replace("\r", ""), max_size=60),
    message_piece().map(lambda t: t.replace("\n", " ").replace("\r", " ")),
    json_line.map(str.rstrip),
    traceback.map(str.rstrip),
)


@fuzz_budget.prop("matcher", default=200)
@given(
    st.integers(0, 10**6),  # a record, modulo the number of findable ones
    value,
    st.sampled_from(["", *PREFIXES]),
    st.lists(noise_line, max_size=6),
    st.lists(noise_line, max_size=6),
    st.sampled_from(["\n", "\r\n"]),
)
# Found by this property: "{app_label}.{model_name} has no field named '{old_name}'" after a
# prefix holding a dot (see test_a_log_prefix_is_not_counted_as_placeholder_values).
@example(31, "abc-def", PREFIXES[1], [], [], "\n")
def test_prop_a_records_message_on_its_own_line_is_matched(
    which: int, val: str, prefix: str, before: list[str], after: list[str], eol: str
) -> None:
    """A paste holding a record's own errorMessage (placeholders filled in) on a line of
    its own, amid log noise, has that record among the matches (or, when records share
    the identical pattern, among a match's same_message)."""
    records = findable()
    record = records[which % len(records)]
    message = render_message(record["errorMessage"], val)
    text = eol.join([*before, prefix + message, *after])
    report = matcher().match(text)
    check_report(report, text)
    found = {k for x in report.matches for k in (x.key, *x.same_message)}
    if record["id"] not in found:
        assert any("budget exhausted" in n for n in report.notes), (
            record["id"],
            message,
            [(x.key, x.text, x.reason) for x in report.matches],
            [(x.key, x.reason) for x in report.suggestions],
        )


@fuzz_budget.prop("matcher", default=100)
@given(hostile_text)
def test_prop_the_same_paste_gives_the_same_report(text: str) -> None:
    """Matching is a function of the text: per-thread scratch, lazily analysed patterns
    and caches leave no trace from one paste to the next."""
    first = matcher().match(text)
    matcher().match("ERROR " + text[::-1])  # something else in between
    again = matcher().match(text)
    if any("budget" in n or "timed out" in n for n in [*first.notes, *again.notes]):
        return  # a confirm ran out of time: how far it got depends on the clock
    assert again.matches == first.matches
    assert again.suggestions == first.suggestions
    assert again.groups == first.groups


def test_a_log_prefix_is_not_counted_as_placeholder_values() -> None:
    r"""Regression (found by the property above, in a few of its random runs): the pattern
    ``(.+?)\.(.+?) has no field named '(.+?)'`` after ``...05:40:23.292539856Z  WARN
    ...meta_client: `` reads its first literal ``.`` inside the timestamp, so its second
    capture held the rest of the log prefix and the match was judged "mostly placeholder
    text"; only the record's shorter look-alike ``%s has no field named '%s'`` matched."""
    record = next(r for r in demo_records() if r["id"] == "25a99d172d7ed8de")
    assert findable().index(record) == 31  # the property's explicit example is this record
    text = PREFIXES[1] + render_message(record["errorMessage"], "abc-def")
    report = matcher().match(text)
    check_report(report, text)
    assert [m.key for m in report.matches][:1] == [record["id"]]


def test_group_lines_are_the_first_and_last_original_lines_of_the_hits() -> None:
    """Regression (found by the first property): a message cut by a wrap hits on its
    second pasted line and on the joined variant line, which the normaliser inserts
    after it but which maps back to the first; the group said first_line=3, last_line=2
    (the extremes of the *normalised* lines, mapped afterwards)."""
    message = messages()[[r["id"] for r in demo_records()].index("f596a5432a332e85")]
    text = "\n" + message
    report = matcher().match(text)
    check_report(report, text)
    (group,) = [g for g in report.groups if g.key == "f596a5432a332e85"]
    assert (group.count, group.first_line, group.last_line) == (2, 2, 3)


def test_prop_fuzz_budget_adds_up() -> None:
    """Every property is registered in tests/fuzz_budget.py, and the fuzz run's examples
    add up to FUZZ_EXAMPLES (10^5 by default) across importer, matcher and normaliser."""
    import tests.engine.test_normalise_props
    import tests.test_importer_props  # noqa: F401

    split = fuzz_budget.SPLIT
    assert sum(share for share, _ in split.values()) == pytest.approx(1.0)
    for area, (_, count) in split.items():
        assert len(set(fuzz_budget.REGISTERED[area])) == count, (area, fuzz_budget.REGISTERED)
    total = sum(fuzz_budget.fuzz_examples(a, i) for a, (_, n) in split.items() for i in range(n))
    assert total == fuzz_budget.TOTAL
    assert min(fuzz_budget.fuzz_examples("importer", i) for i in range(split["importer"][1])) > max(
        fuzz_budget.fuzz_examples(a, i)
        for a in ("matcher", "normaliser")
        for i in range(split[a][1])
    )  # the import path, which takes untrusted files, gets the most examples per property
