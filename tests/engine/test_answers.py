"""One error, one answer: each piece of text read once, the paste's own context choosing
between the records that read it, quoted source code never taken for the message.

The pastes and the competing records are real (``tests/engine/samples.py``); the last test
checks the same pairs against the full dataset.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from kb.engine import Matcher
from kb.engine.evidence import FactsOf, RecordFacts
from tests.datasets import ALL_RECORDS, requires_dataset
from tests.engine import samples as S


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(S.SPECS, cache_dir=tmp_path_factory.mktemp("answers"))


def answer(m: Matcher, text: str):
    return m.match(text, facts=S.facts, repos=S.REPOS)


def test_the_secret_key_traceback_is_one_error_with_one_card(m: Matcher) -> None:
    rep = answer(m, S.PY_SECRET_KEY)
    assert [a.key for a in rep.answers] == ["9a327bbdc99bb228"]
    (a,) = rep.answers
    assert (a.count, a.first_line, a.last_line) == (1, 17, 17)
    # read on the exception line, not on the quoted `raise` line above it
    assert a.match.line == 17
    assert a.match.text == "The SECRET_KEY setting must not be empty."
    assert any("own raising line" in e for e in a.match.evidence)
    assert any("ImproperlyConfigured" in e for e in a.match.evidence)
    # the other Django record reads the same words: listed under it, with why it lost
    assert [x.key for x in a.alternatives] == ["3c77940b7f2c7ac8"]
    assert "raising line" in a.alternatives[0].why
    # the RisingWave phrase is not confident: the frames point at Django
    assert "cd34bb07e5e3dfaf" not in {x.key for x in rep.matches}
    why = {s.key: s.reason for s in rep.suggestions}["cd34bb07e5e3dfaf"]
    assert "point at django/django" in why
    # one summary row: the confident groups are the answers
    assert [(g.key, g.count) for g in rep.groups if g.confident] == [("9a327bbdc99bb228", 1)]


def test_without_record_facts_overlapping_readings_are_still_one_answer(m: Matcher) -> None:
    rep = m.match(S.PY_SECRET_KEY)
    assert [a.key for a in rep.answers] == ["9a327bbdc99bb228"]
    # every confident reading is still in `matches`, the answers' best ones first
    assert rep.matches[0].key == "9a327bbdc99bb228"
    assert all("alternative reading" in x.reason for x in rep.matches[1:])


def test_a_quoted_raise_line_with_a_placeholder_gives_the_exception_lines_values(
    m: Matcher,
) -> None:
    rep = answer(m, S.PY_INVALID_FILTER)
    (a,) = rep.answers
    assert a.key == "548dd4f336d6880e"
    assert a.match.line == 16
    assert a.match.captures == ["upper_first"]
    assert "%s" not in a.match.text
    assert a.count == 1


def test_a_match_only_in_quoted_source_is_evidence_not_an_answer(m: Matcher) -> None:
    cut = S.PY_INVALID_FILTER.rsplit("django.template", 1)[0]  # the paste stops at the quote
    rep = answer(m, cut)
    assert rep.answers == []
    assert rep.matches == []
    why = {s.key: s.reason for s in rep.suggestions}["548dd4f336d6880e"]
    assert "source code the traceback quotes" in why


# (paste, the record its frames point at, a record of other software reading a shared phrase)
POINTED = [
    (S.PY_SECRET_KEY, "9a327bbdc99bb228", "cd34bb07e5e3dfaf"),
    (S.JAVA_KAFKA, "3358a242ac30556c", "f97cc441615a2a72"),
    (S.GO_ETCD, "3d48507c0fdbb943", "bccbb8187427ae32"),
    (S.RUST_RISINGWAVE, "5f6ba2e49f0c0f8a", "c8c53a131e4a6fe8"),
]


@pytest.mark.parametrize(("text", "pointed", "other"), POINTED, ids=["py", "java", "go", "rust"])
def test_a_record_the_frames_point_at_is_never_outranked_by_other_software(
    m: Matcher, text: str, pointed: str, other: str
) -> None:
    rep = answer(m, text)
    assert rep.answers[0].key == pointed
    assert rep.matches[0].key == pointed
    assert other not in {a.key for a in rep.answers}
    assert other not in {x.key for x in rep.matches}  # a suggestion at most
    assert rep.answers[0].match.evidence  # "Why this match" names the evidence


def test_a_kafka_log_never_gives_a_risingwave_card_for_a_shared_phrase(m: Matcher) -> None:
    rep = answer(m, S.JAVA_KAFKA_UNKNOWN)  # no record has this Kafka message
    assert rep.answers == []
    why = {s.key: s.reason for s in rep.suggestions}["f97cc441615a2a72"]
    assert "point at apache/kafka, not at risingwavelabs/risingwave" in why


def test_a_repeated_json_line_is_counted_once_per_line(m: Matcher) -> None:
    rep = answer(m, S.GO_ETCD_JSON)
    (a,) = rep.answers
    assert (a.key, a.count, a.first_line, a.last_line) == ("3d48507c0fdbb943", 3, 1, 3)


def test_another_wording_is_a_partial_match_with_the_words_that_differ(m: Matcher) -> None:
    rep = answer(m, S.JAVA_KAFKA_BROKER)
    (a,) = rep.answers
    assert a.key == "06afaf5115e90cca"
    assert a.match.partial
    assert a.match.diff is not None
    assert ("Node", "Broker") in a.match.diff.changes


def test_answers_come_in_reading_order_and_match_the_confident_groups(m: Matcher) -> None:
    text = S.JAVA_KAFKA_BROKER + S.JAVA_KAFKA
    rep = answer(m, text)
    assert [a.key for a in rep.answers] == ["06afaf5115e90cca", "3358a242ac30556c"]
    assert [a.order for a in rep.answers] == [1, 2]
    assert [g.key for g in rep.groups if g.confident] == [a.key for a in rep.answers]


@pytest.mark.slow
@requires_dataset(ALL_RECORDS)
@pytest.mark.parametrize(("text", "pointed", "other"), POINTED, ids=["py", "java", "go", "rust"])
def test_the_pairs_hold_against_the_full_dataset(
    full_matcher: Matcher, records: list[dict], text: str, pointed: str, other: str
) -> None:
    by_id = {r["id"]: r for r in records}
    rep = full_matcher.match(text, facts=facts_of(by_id), repos={r["repo"] for r in records})
    first = rep.answers[0]
    assert pointed in (first.key, *first.match.same_message)
    carded = {k for a in rep.answers for k in (a.key, *a.match.same_message)}
    assert other not in carded
    if text is S.PY_SECRET_KEY:
        assert len(rep.answers) == 1
        assert rep.answers[0].count == 1


def facts_of(by_id: dict[str, dict]) -> FactsOf:
    def facts(keys: Iterable[str]) -> dict[str, RecordFacts]:
        return {
            k: RecordFacts(r["repo"], r["filePath"], r["errorClass"] or "", r["lineNumber"])
            for k in keys
            if (r := by_id.get(k)) is not None
        }

    return facts
