"""A record's older wordings (aliases): compiled beside it, answered with the record, one
answer per piece of text, the current wording first, a bad alias left out; and the
release a paste comes from, read from its own frames and version strings only.

The messages are real rewordings (SQLAlchemy's ``No row was found for one()`` became
``No row was found when one was required`` in 1.4; Kafka's ``Broker may not be
available`` became ``Node may not be available``); the ranges and lines are hand-written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec
from kb.engine.evidence import RecordFacts
from kb.engine.releases import Location, ReleaseFacts, fit_of
from kb.engine.types import Wording


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


NO_ROW = "sa-no-row"
NO_ROW_SPEC = PatternSpec(
    NO_ROW,
    "No row was found when one was required",
    "No row was found when one was required",
    aliases=(Wording(r"No row was found for one\(\)", "No row was found for one()", "1.3.0",
                     "1.3.24"),),
)  # fmt: skip
TABLE = "sa-table-defined"
TABLE_SPEC = PatternSpec(
    TABLE,
    r"Table '(.+?)' is already defined for this MetaData instance\.",
    "Table '{}' is already defined for this MetaData instance.",
    aliases=(Wording(r"Table '(.+?)' is already defined for this", "Table '{}' is already "
                     "defined for this", "1.0.0", "1.2.19"),),
)  # fmt: skip
NODE = "kafka-node"  # its current wording is what an older release of BROKER printed
BROKER = "kafka-broker"
NODE_SPEC = PatternSpec(
    NODE,
    r"Connection to node (.+?) could not be established\. Broker may not be available\.",
    "Connection to node {} could not be established. Broker may not be available.",
)
BROKER_SPEC = PatternSpec(
    BROKER,
    r"Connection to node (.+?) \((.+?)\) could not be established\. Node may not be available\.",
    "Connection to node {} ({}) could not be established. Node may not be available.",
    aliases=(
        Wording(
            r"Connection to node (.+?) could not be established\. Broker may not be available\.",
            "Connection to node {} could not be established. Broker may not be available.",
            "2.0.0",
            "2.7.2",
        ),
    ),
)
BAD = "bad-alias"
BAD_SPEC = PatternSpec(
    BAD,
    r"Invalid isolation level for this dialect: (.+?)$",
    "Invalid isolation level for this dialect: {}",
    aliases=(Wording(r"Invalid isolation level (?P<x>for) (?P=x) dialect", "x", "0.9", "1.0"),),
)
URL = "sa-url"
URL_SPEC = PatternSpec(
    URL,
    "Could not parse SQLAlchemy URL from given URL string",
    "Could not parse SQLAlchemy URL from given URL string",
    aliases=(Wording("Could not parse rfc1738 URL from string '(.+?)'",
                     "Could not parse rfc1738 URL from string '%s'", "0.9.0", "1.3.24"),),
)  # fmt: skip
SPECS = [NO_ROW_SPEC, TABLE_SPEC, NODE_SPEC, BROKER_SPEC, BAD_SPEC, URL_SPEC]


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(SPECS, cache_dir=tmp_path_factory.mktemp("aliases"))


def test_an_old_wording_answers_with_its_record_and_says_so(m: Matcher) -> None:
    rep = m.match("sqlalchemy.orm.exc.NoResultFound: No row was found for one()")
    assert [a.key for a in rep.answers] == [NO_ROW]
    (match,) = rep.matches
    assert match.key == NO_ROW
    assert match.wording is not None
    assert (match.wording.first_release, match.wording.last_release) == ("1.3.0", "1.3.24")
    assert match.wording.message == "No row was found for one()"
    assert [g.key for g in rep.groups] == [NO_ROW]


def test_the_current_wording_says_no_older_one(m: Matcher) -> None:
    rep = m.match("sqlalchemy.exc.NoResultFound: No row was found when one was required")
    assert [x.key for x in rep.matches] == [NO_ROW]
    assert rep.matches[0].wording is None


def test_an_alias_and_the_record_reading_the_same_text_are_one_answer(m: Matcher) -> None:
    text = "InvalidRequestError: Table 'users' is already defined for this MetaData instance."
    rep = m.match(text)
    assert [x.key for x in rep.matches] == [TABLE]  # no second reading of the same record
    (a,) = rep.answers
    assert a.alternatives == ()
    assert a.match.wording is None  # the current wording reads more of it
    assert [(g.key, g.count) for g in rep.groups] == [(TABLE, 1)]


def test_a_record_read_by_both_wordings_on_two_lines_is_one_answer_counted_twice(
    m: Matcher,
) -> None:
    text = (
        "worker-1 NoResultFound: No row was found for one()\n"
        "worker-2 NoResultFound: No row was found when one was required\n"
    )
    rep = m.match(text)
    assert [a.key for a in rep.answers] == [NO_ROW]
    assert [x.key for x in rep.matches] == [NO_ROW]
    assert [(g.key, g.count, g.first_line, g.last_line) for g in rep.groups] == [(NO_ROW, 2, 1, 2)]


def test_a_current_wording_beats_another_records_older_one_on_the_same_text(
    m: Matcher,
) -> None:
    text = (
        "WARN [Producer clientId=p1] Connection to node 1 could not be established. "
        "Broker may not be available."
    )
    rep = m.match(text)
    (a,) = rep.answers
    assert a.key == NODE
    assert a.match.wording is None
    assert a.match.same_message == [BROKER]  # the alias's record reads it too, listed after


def test_a_bad_alias_is_left_out_with_its_reason_and_the_record_still_matches(
    m: Matcher,
) -> None:
    refused = m.refused_aliases()
    assert list(refused) == [BAD]
    ((pattern, why),) = refused[BAD]
    assert "(?P=x)" in pattern
    assert why
    assert BAD not in m.refused()  # the record itself is not refused
    assert m.admission(BAD).ok
    assert m.stats["aliases_refused"] == 1
    rep = m.match("ArgumentError: Invalid isolation level for this dialect: SERIAL")
    assert [x.key for x in rep.matches] == [BAD]


def test_stats_count_the_aliases_and_the_records_are_not_counted_twice(m: Matcher) -> None:
    assert m.stats["aliases"] == 5
    assert len(m) == len(SPECS)
    assert m.keys() == frozenset(s.key for s in SPECS)


def test_aliases_survive_the_cache_file(m: Matcher, tmp_path: Path) -> None:
    again = Matcher.loads(m.dumps())
    rep = again.match("NoResultFound: No row was found for one()")
    assert rep.matches[0].key == NO_ROW
    assert rep.matches[0].wording == NO_ROW_SPEC.aliases[0]


def test_the_build_cache_tells_specs_apart_by_their_aliases(tmp_path: Path) -> None:
    plain = PatternSpec(NO_ROW, NO_ROW_SPEC.pattern, NO_ROW_SPEC.message)
    first = Matcher.build([plain], cache_dir=tmp_path)
    assert not first.match("No row was found for one()").matches
    second = Matcher.build([NO_ROW_SPEC], cache_dir=tmp_path)
    assert not second.stats.get("matcher_from_cache")
    assert [x.key for x in second.match("No row was found for one()").matches] == [NO_ROW]


def test_an_edit_replaces_the_aliases_and_a_removal_takes_them_away(m: Matcher) -> None:
    old_text = "NoResultFound: No row was found for one()"
    edited = PatternSpec(
        NO_ROW,
        NO_ROW_SPEC.pattern,
        NO_ROW_SPEC.message,
        aliases=(Wording(r"No row found for one\(\) at all", "No row found for one() at all",
                         "0.9.0", "1.2.19"),),
    )  # fmt: skip
    m2 = m.with_changes([edited], [])
    assert not m2.match(old_text).matches
    rep = m2.match("NoResultFound: No row found for one() at all")
    assert [x.key for x in rep.matches] == [NO_ROW]
    assert rep.matches[0].wording == edited.aliases[0]
    assert [x.key for x in m.match(old_text).matches] == [NO_ROW]  # the original is intact
    m3 = m2.with_changes([], [BROKER])
    rep = m3.match("Connection to node 1 could not be established. Broker may not be available.")
    assert rep.matches[0].same_message == []
    m4 = m.with_changes([NO_ROW_SPEC], [])  # re-adding the same aliases: the base pattern
    assert [x.key for x in m4.match(old_text).matches] == [NO_ROW]
    assert len(m4) == len(m)


def test_a_retired_alias_left_out_of_the_spec_is_not_matched(tmp_path: Path) -> None:
    # the same record twice: once with its older wording, once with it retired (the
    # holder leaves a retired wording out of the spec)
    retired = PatternSpec("sa-no-row-2", NO_ROW_SPEC.pattern, NO_ROW_SPEC.message, aliases=())
    m = Matcher.build([NO_ROW_SPEC, retired], cache_dir=tmp_path)
    (match,) = m.match("No row was found for one()").matches
    assert (match.key, match.same_message) == (NO_ROW, [])
    (match,) = m.match(NO_ROW_SPEC.message).matches
    assert {match.key, *match.same_message} == {NO_ROW, "sa-no-row-2"}


# ---------------------------------------------------------------- the release of a paste
QUERY = "lib/sqlalchemy/orm/query.py"
NO_ROW_FACTS = ReleaseFacts(
    "sqlalchemy",
    vkey,
    {NO_ROW_SPEC.pattern: ("1.4.0", "2.0.30"), NO_ROW_SPEC.aliases[0].pattern: ("1.3.0", "1.3.24")},
    (
        Location(QUERY, 3282, "1.3.0", "1.3.17"),
        Location(QUERY, 3293, "1.3.18", "1.3.24"),
        Location("lib/sqlalchemy/engine/result.py", 1234, "1.4.0", "2.0.30"),
    ),
)
KAFKA = "clients/src/main/java/org/apache/kafka/clients/NetworkClient.java"
NODE_FACTS = ReleaseFacts(
    "kafka",
    vkey,
    {NODE_SPEC.pattern: ("2.0.0", "3.7.0")},
    (Location("clients/src/main/java/org/apache/kafka/clients/ClusterConnectionStates.java", 88,
              "2.0.0", "3.7.0"),),
)  # fmt: skip
BROKER_FACTS = ReleaseFacts(
    "kafka",
    vkey,
    {BROKER_SPEC.pattern: ("2.8.0", "3.7.0"), BROKER_SPEC.aliases[0].pattern: ("2.0.0", "2.7.2")},
    (Location(KAFKA, 762, "2.0.0", "2.3.1"), Location(KAFKA, 781, "2.4.0", "2.7.2"),
     Location(KAFKA, 790, "2.8.0", "3.7.0")),
)  # fmt: skip
FACTS = {NO_ROW: NO_ROW_FACTS, NODE: NODE_FACTS, BROKER: BROKER_FACTS}


def releases(keys: Iterable[str]) -> Mapping[str, ReleaseFacts]:
    return {k: FACTS[k] for k in keys if k in FACTS}


PY_TRACE = """Traceback (most recent call last):
  File "/srv/app/views.py", line 41, in detail
    user = session.query(User).filter_by(id=uid).one()
  File "/usr/lib/python3.8/site-packages/sqlalchemy/orm/query.py", line {line}, in one
    raise orm_exc.NoResultFound("No row was found for one()")
sqlalchemy.orm.exc.NoResultFound: No row was found for one()
"""


def test_a_tracebacks_line_numbers_say_which_releases_printed_it(m: Matcher) -> None:
    rep = m.match(PY_TRACE.format(line=3293), releases=releases)
    (match,) = rep.matches
    assert match.key == NO_ROW
    assert match.fit is not None
    assert match.fit.ranges == (("1.3.18", "1.3.24"),)
    assert (match.fit.first, match.fit.last, match.fit.how) == ("1.3.18", "1.3.24", "line numbers")
    assert 'query.py", line 3293' in match.fit.shown
    older = m.match(PY_TRACE.format(line=3282), releases=releases).matches[0]
    assert older.fit is not None
    assert older.fit.ranges == (("1.3.0", "1.3.17"),)


def test_no_fit_is_claimed_when_the_paste_shows_no_line_the_site_had(m: Matcher) -> None:
    assert m.match(PY_TRACE.format(line=3000), releases=releases).matches[0].fit is None
    bare = "sqlalchemy.orm.exc.NoResultFound: No row was found for one()"
    assert m.match(bare, releases=releases).matches[0].fit is None
    assert m.match(PY_TRACE.format(line=3293)).matches[0].fit is None  # no facts: no claim


def test_a_version_string_in_the_log_says_the_release(m: Matcher) -> None:
    text = "INFO using SQLAlchemy 1.3.24\nNoResultFound: No row was found for one()\n"
    match = m.match(text, releases=releases).matches[0]
    assert match.fit is not None
    assert (match.fit.ranges, match.fit.how) == ((("1.3.24", "1.3.24"),), "version")
    assert match.fit.shown == "SQLAlchemy 1.3.24"
    two = "SQLAlchemy 1.3.24 here, sqlalchemy==1.4.2 there\nNo row was found for one()\n"
    assert m.match(two, releases=releases).matches[0].fit is None  # which one? no claim
    path = "/opt/sqlalchemy/1.3.24/x.py\nNo row was found for one()\n"
    assert m.match(path, releases=releases).matches[0].fit is None  # a path part, no version


JAVA = """[2020-03-02 10:00:01,123] WARN [Producer clientId=p1] Connection to node 1 could not \
be established. Broker may not be available. (org.apache.kafka.clients.NetworkClient)
java.lang.IllegalStateException: x
\tat org.apache.kafka.clients.NetworkClient.processDisconnection(NetworkClient.java:{line})
\tat org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:540)
"""


def test_a_java_traces_line_numbers_rank_the_wording_of_that_release_first(m: Matcher) -> None:
    # without the trace the current wording of another record wins (the test above);
    # the trace's line is where BROKER's site was in 2.4.0-2.7.2, when it printed this
    rep = m.match(JAVA.format(line=781), releases=releases)
    (a,) = rep.answers
    assert a.key == BROKER
    assert a.match.wording is not None
    assert a.match.wording.last_release == "2.7.2"
    assert a.match.fit is not None
    assert a.match.fit.ranges == (("2.4.0", "2.7.2"),)
    assert a.match.same_message == [NODE]
    # a line of a release whose wording was the new one contradicts the old wording
    rep = m.match(JAVA.format(line=790), releases=releases)
    assert rep.answers[0].key == NODE


DJANGO = ReleaseFacts("django", vkey, {"x": ("3.0.0", "3.2.25")})


@pytest.mark.parametrize(
    ("log", "version"),
    [
        ("Django version 3.2.5, using settings 'mysite.settings'", "3.2.5"),
        ("Running on django==3.2.5.", "3.2.5"),
        ("pip: Successfully installed Django-3.2.5 asgiref-3.4.1", "3.2.5"),
        ("the SQL said django 3.2.5 and then 3.2.5 again (Django 3.2.5)", "3.2.5"),
        ("django-3.2.5", "3.2.5"),
    ],
)
def test_a_version_string_names_the_release(log: str, version: str) -> None:
    fit = fit_of(log, [], DJANGO)
    assert fit is not None
    assert (fit.ranges, fit.how) == (((version, version),), "version")


@pytest.mark.parametrize(
    "log",
    [
        "Django version 3.2.5 upgraded to Django version 4.0.1",  # which one? no claim
        "mydjango 3.2.5",  # another name that ends with it
        "django_3.2.5",  # not how a version is written after a name
        "django/3.2/5 and django.3.2.5",  # path parts, module parts
        "Django version 3.2.5.1.7",  # no release has this many parts: not read
        "Django is at version three",
    ],
)
def test_no_version_is_claimed_from_what_is_not_one(log: str) -> None:
    assert fit_of(log, [], DJANGO) is None


def test_a_partial_reading_of_an_older_wording_is_diffed_against_that_wording(
    m: Matcher,
) -> None:
    # the paste stops inside the value: a partial reading of the 1.3 wording, whose words
    # are all there (against today's message, "rfc1738 ... string" would be reworded)
    text = "sqlalchemy.exc.ArgumentError: Could not parse rfc1738 URL from string 'pg//kb@db"
    (match,) = m.match(text).matches
    assert match.key == URL
    assert match.partial
    assert match.wording == URL_SPEC.aliases[0]
    assert match.diff is None or match.diff.changes == ()


def test_a_cut_off_older_wording_is_found_through_its_own_message(m: Matcher) -> None:
    # the paste stops at the end of the message's fixed text, before its value: only the
    # similarity of the older wording's message leads to confirming it
    rep = m.match("sqlalchemy.exc.ArgumentError: Could not parse rfc1738 URL from string")
    (match,) = rep.matches
    assert (match.key, match.kind) == (URL, "truncated")
    assert match.wording == URL_SPEC.aliases[0]
    assert rep.suggestions == []  # the record is the answer, not also a suggestion


def test_a_cut_off_older_wording_edited_in_is_found_too(m: Matcher) -> None:
    plain = PatternSpec(URL, URL_SPEC.pattern, URL_SPEC.message)
    m2 = Matcher.build([plain], with_similarity=True).with_changes([URL_SPEC], [])
    rep = m2.match("ArgumentError: Could not parse rfc1738 URL from string")
    assert [(x.key, x.wording) for x in rep.matches] == [(URL, URL_SPEC.aliases[0])]


# A site the release walk could not follow into its next file: the record it left behind
# (removed in 2.0.0) and the live record read the same text equally well.
MOVED_OLD = "sa-textual-elements"
MOVED_NEW = "sa-textual-coercions"
TEXTUAL = r"Textual SQL expression (.+?) should be explicitly declared as text\((.+?)\)"
TEXTUAL_MESSAGE = "Textual SQL expression {} should be explicitly declared as text({})"
MOVED_SPECS = [
    PatternSpec(MOVED_OLD, TEXTUAL, TEXTUAL_MESSAGE),
    PatternSpec(MOVED_NEW, TEXTUAL + "$", TEXTUAL_MESSAGE),
]
MOVED_TEXT = (
    "ArgumentError: Textual SQL expression 'select 1' should be explicitly declared as "
    "text('select 1')"
)


def _moved_facts(removed: bool) -> Callable[[Iterable[str]], Mapping[str, RecordFacts]]:
    facts = {
        MOVED_OLD: RecordFacts("sqlalchemy/sqlalchemy", "lib/sqlalchemy/sql/elements.py", "",
                               4520, "1.3.14" if removed else ""),
        MOVED_NEW: RecordFacts("sqlalchemy/sqlalchemy", "lib/sqlalchemy/sql/coercions.py", "",
                               560),
    }  # fmt: skip
    return lambda keys: {k: facts[k] for k in keys if k in facts}


def test_on_the_same_text_a_record_still_in_the_code_beats_a_removed_one(
    tmp_path: Path,
) -> None:
    m = Matcher.build(MOVED_SPECS, cache_dir=tmp_path)
    before = m.match(MOVED_TEXT, facts=_moved_facts(removed=False))
    assert [a.match.key for a in before.answers] == [MOVED_OLD]  # the first of a tie
    rep = m.match(MOVED_TEXT, facts=_moved_facts(removed=True))
    (a,) = rep.answers
    assert a.match.key == MOVED_NEW
    assert [alt.key for alt in a.alternatives] == [MOVED_OLD]
    assert "no longer in the code since 1.3.14" in a.alternatives[0].why
