"""The word diff of a reworded message: what changed, placeholders never counted."""

from __future__ import annotations

from kb.engine import Matcher, PatternSpec
from kb.engine.worddiff import MAX_WORDS, word_diff

SA_OLD = "Could not parse rfc1738 URL from string '%s'"
SA_PASTE = (
    "2026-11-30 10:00:02,118 ERROR [alembic.env] sqlalchemy.exc.ArgumentError: "
    "Could not parse SQLAlchemy URL from string 'postgres//kb@db/kb'"
)


def test_a_renamed_word_is_named_and_the_value_is_not() -> None:
    d = word_diff(SA_OLD, SA_PASTE)
    assert d is not None
    assert d.summary == "reworded: rfc1738 → SQLAlchemy"
    assert d.changes == (("rfc1738", "SQLAlchemy"),)
    ops = [(s.op, s.text) for s in d.segments]
    assert ops == [
        ("same", "Could not parse"),
        ("del", "rfc1738"),
        ("ins", "SQLAlchemy"),
        ("same", "URL from string"),
        ("value", "'postgres//kb@db/kb'"),
    ]
    # the log line's envelope (time, level, logger, exception class) is not a change
    assert "ERROR" not in " ".join(s.text for s in d.segments)


def test_placeholders_of_every_syntax_are_wildcards() -> None:
    for template in (
        "Backfill progress for vnode {} not found",  # Rust
        "Backfill progress for vnode {vnode} not found",  # Rust, named
        "Backfill progress for vnode %d not found",  # printf
        "Backfill progress for vnode %(vnode)s not found",  # Python
    ):
        assert word_diff(template, "ERROR Backfill progress for vnode 17 not found") is None
        d = word_diff(template, "ERROR Backfill state for vnode 17 not found")
        assert d is not None, template
        assert d.changes == (("progress", "state"),), template


def test_dropped_and_added_words() -> None:
    d = word_diff(
        "Failed to connect to meta server {}, trying again",
        "WARN Failed to connect to the meta server 127.0.0.1:5690",
    )
    assert d is not None
    assert ("", "the") in d.changes
    assert ("trying again", "") in d.changes
    assert "added the" in d.summary
    assert "trying again missing" in d.summary


def test_nothing_to_say_when_the_wording_is_the_same() -> None:
    assert word_diff("Enter a valid email address.", "['Enter a valid email address.']") is None
    assert word_diff("", "anything") is None
    assert word_diff("Unable to acquire JDBC Connection", "") is None


def test_bounded_on_a_huge_line() -> None:
    line = "word " * 100_000 + "Could not parse SQLAlchemy URL from string 'x'"
    d = word_diff(SA_OLD, line)
    assert d is not None
    assert d.changes == (("rfc1738", "SQLAlchemy"),)
    assert len(word_diff(SA_OLD * 50, "x " * 5000 + SA_PASTE).segments) <= 4 * MAX_WORDS


def test_a_suggestion_carries_the_diff() -> None:
    m = Matcher.build(
        [
            PatternSpec("sa-url", r"Could not parse rfc1738 URL from string '(.+?)'", SA_OLD),
            PatternSpec("other", r"Unable to acquire JDBC Connection", "Unable to acquire JDBC"),
        ]
    )
    rep = m.match(SA_PASTE)
    assert not rep.matches
    (s,) = [s for s in rep.suggestions if s.key == "sa-url"]
    assert s.diff is not None
    assert s.diff.summary == "reworded: rfc1738 → SQLAlchemy"
    assert s.diff.as_json()["changes"] == [{"record": "rfc1738", "paste": "SQLAlchemy"}]
