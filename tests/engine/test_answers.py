"""One error, one answer: each piece of text read once, the paste's own context choosing
between the records that read it, quoted source code never taken for the message.

The pastes and the competing records are real (``tests/engine/samples.py``); the last test
checks the same pairs against the full dataset.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from kb.engine import Matcher, PatternSpec
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


def test_a_paste_cut_before_its_exception_line_is_named_by_the_raising_line(
    m: Matcher,
) -> None:
    cut = S.PY_INVALID_FILTER.rsplit("django.template", 1)[0]  # stops at the `raise` line
    rep = answer(m, cut)
    (a,) = rep.answers
    assert a.key == "548dd4f336d6880e"
    assert a.match.line == 15
    assert any("raising line a traceback quotes" in e for e in a.match.evidence)


def test_source_quoted_by_a_calling_frame_is_never_the_error(m: Matcher) -> None:
    text = (
        S.PY_INVALID_FILTER.replace(
            "    filter_expression = self.compile_filter(token.contents)",
            "    logger.warning(\"Invalid filter: '%s'\", name)",
        )
        .replace("TemplateSyntaxError(\"Invalid filter: '%s'\" % filter_name)", "KeyError(name)")
        .replace("django.template.exceptions.TemplateSyntaxError: Invalid filter:", "KeyError:")
    )
    rep = answer(m, text)
    assert rep.answers == []
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


LINKED = [
    PatternSpec("pool", r"connection pool exhausted after (.+?) waiting", "pool {}"),
    PatternSpec("render", r"failed to render the dashboard for (.+?)", "render {}"),
    PatternSpec("disk", r"no space left on device while writing (.+?)", "disk {}"),
    PatternSpec("apply", r"failed to apply the change set: (.+?)", "apply: %w"),
    PatternSpec("quorum", r"etcdserver: request timed out waiting for quorum", "quorum"),
]

# Go services' JSON log lines: two errors of one request, and an unrelated one between.
REQUEST_LOG = """\
{"level":"error","ts":"2024-03-01T10:00:00.101Z","msg":"connection pool exhausted after 30s waiting","request_id":"7f3c9a1e-42"}
{"level":"error","ts":"2024-03-01T10:00:00.140Z","msg":"no space left on device while writing wal-0003","request_id":"c0ffee00-17"}
{"level":"error","ts":"2024-03-01T10:00:00.180Z","msg":"failed to render the dashboard for team-7","request_id":"7f3c9a1e-42"}
"""  # noqa: E501

# An etcd client logging the error, then the caller logging it wrapped (fmt.Errorf %w).
GO_CHAIN_LOG = """\
2024-03-01T10:00:00.101Z\twarn\tetcdserver: request timed out waiting for quorum
2024-03-01T10:00:00.102Z\terror\tfailed to apply the change set: etcdserver: request timed out waiting for quorum
"""  # noqa: E501


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(LINKED, cache_dir=tmp_path_factory.mktemp("linked"))


def test_the_same_request_id_links_two_errors_and_says_so(linked: Matcher) -> None:
    rep = linked.match(REQUEST_LOG)
    assert [a.key for a in rep.answers] == ["pool", "render", "disk"]
    _pool, render, disk = rep.answers
    assert render.cause == "pool"
    assert render.reason == (
        "consequence of the error on line 1, linked by the same request id 7f3c9a1e-42"
    )
    assert disk.cause is None
    assert [a.order for a in rep.answers] == [1, 2, 3]
    assert [(g.key, g.order, g.cause) for g in rep.groups if g.confident] == [
        ("pool", 1, None),
        ("render", 2, "pool"),
        ("disk", 3, None),
    ]


def test_unrelated_lines_are_never_a_consequence(linked: Matcher) -> None:
    text = REQUEST_LOG.replace("c0ffee00-17", "0badf00d-99").replace("7f3c9a1e-42", "x", 1)
    rep = linked.match(text)
    assert all(a.cause is None for a in rep.answers)
    assert not any("consequence" in a.reason for a in rep.answers)


def test_a_go_error_chain_links_the_wrapper_to_the_error_it_wraps(linked: Matcher) -> None:
    rep = linked.match(GO_CHAIN_LOG)
    assert [a.key for a in rep.answers] == ["quorum", "apply"]
    assert rep.answers[1].cause == "quorum"
    assert "linked by a Go error chain" in rep.answers[1].reason
