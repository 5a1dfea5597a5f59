"""Ranking rules: specificity wins, generic patterns and wrappers never lead, truncated
and retyped messages are recognised, reasons explain the decision."""

from __future__ import annotations

import pytest

from kb.engine import Matcher, PatternSpec
from kb.engine.rank import Candidate, confident, rank

SPECS = [
    PatternSpec("wrap-item", r"Item not found: (.+?)", "Item not found: {0}"),
    PatternSpec("inner-col", r"Invalid column: (.+?)", "Invalid column: {}"),
    PatternSpec("short", r"failed to connect", "failed to connect"),
    PatternSpec("long", r"failed to connect to meta server (.+?), trying again", "m"),
    PatternSpec("word", r"database", "database"),
    PatternSpec("wrapper-sink", r"Remote sink error: (.+?)", "Remote sink error: {0}"),
    PatternSpec(
        "django-settings",
        r"Requested (.+?), but settings are not configured\. You must either define the "
        r"environment variable (.+?) or call settings\.configure\(\) before accessing settings\.",
        "Requested %s, but settings are not configured. ...",
    ),
    PatternSpec("pool", r"QueuePool limit of size (.+?) overflow (.+?) reached, connection "
                r"timed out, timeout (.+?)", "QueuePool limit of size %d overflow %d ..."),
]  # fmt: skip


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(SPECS, cache_dir=tmp_path_factory.mktemp("rank"))


def test_most_specific_wins_and_reason_says_so(m: Matcher) -> None:
    rep = m.match("WARN failed to connect to meta server 10.0.0.1:5690, trying again")
    assert [x.key for x in rep.matches[:2]] == ["long", "short"]
    assert "most specific of 2" in rep.matches[0].reason
    assert rep.matches[0].literal_chars > rep.matches[1].literal_chars


def test_wrapped_message_beats_its_wrapper(m: Matcher) -> None:
    rep = m.match("ERROR: QueryError: Item not found: Invalid column: cache_size")
    assert rep.matches[0].key == "inner-col"
    wrapper = next(x for x in rep.matches if x.key == "wrap-item")
    assert "wraps another matched message" in wrapper.reason


def test_wrapper_around_unknown_message_is_not_confident(m: Matcher) -> None:
    rep = m.match(
        "Remote sink error: INTERNAL: Error when exec 22001, message Data truncation: "
        "Incorrect datetime value: 'cccc' for column 'column2' at row 1;"
    )
    assert rep.matches == []
    assert any(s.key == "wrapper-sink" and "placeholder" in s.reason for s in rep.suggestions)


def test_generic_word_never_confident(m: Matcher) -> None:
    rep = m.match("INFO connected to database primary in 3ms")
    assert rep.matches == []
    assert [s.key for s in rep.suggestions] == ["word"]
    assert "generic" in rep.suggestions[0].reason


def test_truncated_paste_still_matches(m: Matcher) -> None:
    rep = m.match(
        "ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
        "configured. You must either define the environment variable DJANGO_SETTINGS_MODULE "
        "or call settings"
    )
    assert rep.matches[0].key == "django-settings"
    assert rep.matches[0].kind == "truncated"
    assert 0.5 < rep.matches[0].coverage < 1


def test_case_retyped_message_matches_relaxed(m: Matcher) -> None:
    rep = m.match(
        "sqlalchemy.exc.TimeoutError: queuePool limit of size 5 overflow 10 reached, "
        "connection timed out, timeout 30.00"
    )
    assert rep.matches[0].key == "pool"
    assert rep.matches[0].kind in ("relaxed", "truncated", "diverged")
    assert rep.matches[0].coverage < 1  # the retyped "q" is not counted


def _cand(**kw: object) -> Candidate:
    base: dict[str, object] = {
        "pid": 0, "kind": "exact", "line": 0, "start": 0, "end": 10, "line_start": 0,
        "line_text": "x" * 10, "captures": [], "literal_exact": 30, "literal_total": 30,
        "generic": False,
    }  # fmt: skip
    base.update(kw)
    return Candidate(**base)


def test_confidence_rules() -> None:
    assert confident(_cand())[0]
    assert not confident(_cand(generic=True))[0]
    assert not confident(_cand(kind="truncated", literal_exact=10, literal_total=40))[0]
    assert confident(_cand(kind="truncated", literal_exact=35, literal_total=60))[0]
    assert not confident(_cand(literal_exact=15, literal_total=15, captures=["v" * 80]))[0]


def test_error_line_breaks_ties() -> None:
    info = _cand(pid=1, line=0, start=30, line_text="2024 INFO mod: " + "x" * 40, line_start=0)
    err = _cand(pid=2, line=5, start=30, line_text="2024 ERROR mod: " + "x" * 40, line_start=0)
    sure, _ = rank([info, err])
    assert [c.pid for c in sure] == [2, 1]


def test_info_line_match_ranks_below_error_line() -> None:
    info = _cand(pid=1, line=0, start=20, line_text="2024 INFO mod: " + "x" * 40, line_start=0)
    err = _cand(
        pid=2, line=1, start=20, line_text="2024 ERROR mod: " + "x" * 40, line_start=0,
        literal_exact=28, literal_total=28,
    )  # fmt: skip
    sure, _ = rank([info, err])
    assert [c.pid for c in sure] == [2, 1]


OVERREAD_SPECS = [
    PatternSpec("outer", r"(.+?) missing from registry: (.+?)", "{kind} missing from registry: {}"),
    PatternSpec("shares-literal", r"plugin (.+?) missing from registry", "plugin {} missing..."),
    PatternSpec("in-lead", r"plugin or adapter kind", "plugin or adapter kind"),
    PatternSpec("inner-msg", r"adapter handshake timed out", "adapter handshake timed out"),
]


@pytest.fixture(scope="module")
def m_overread(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(OVERREAD_SPECS, cache_dir=tmp_path_factory.mktemp("overread"))


def test_match_read_further_by_another_ranks_below_it(m_overread: Matcher) -> None:
    # "shares-literal" (22 literal chars) and "in-lead" (22) both stop at "registry"/"kind";
    # "outer" (20) reads the same words as literal and goes on to the end of the line
    rep = m_overread.match("ERROR loader: plugin or adapter kind missing from registry: csv")
    assert rep.matches[0].key == "outer"
    assert {x.key for x in rep.matches[1:]} == {"shares-literal", "in-lead"}
    assert all("reads more of this line" in x.reason for x in rep.matches[1:])


def test_message_inside_trailing_placeholder_still_beats_its_wrapper(m_overread: Matcher) -> None:
    rep = m_overread.match("ERROR csv missing from registry: adapter handshake timed out")
    assert rep.matches[0].key == "inner-msg"


def test_message_reaching_the_line_end_is_not_read_further(m_overread: Matcher) -> None:
    rep = m_overread.match("ERROR loader: plugin csv missing from registry")
    assert rep.matches[0].key == "shares-literal"
