"""Record validation: the pure rules of ``kb.records.validation`` and the model's clean(), which
hands them the stored row and the collision lookup (what the admin and API share)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from kb.records.models import ErrorRecord, Status
from kb.records.schema import parse_record
from kb.records.validation import (
    Collision,
    find_collisions,
    message_is_matched,
    prefilter_word,
    record_warnings,
    render_message,
    validate_record,
)
from tests.factories import make_line, make_record

pytestmark = pytest.mark.django_db


def errors_of(record: ErrorRecord) -> dict[str, list[str]]:
    """What the model's clean() refuses, by attribute (empty when it accepts)."""
    try:
        record.clean()
    except ValidationError as exc:
        return exc.message_dict
    return {}


def warnings_of(record: ErrorRecord) -> list[str]:
    accepted = record.collisions if record.accept_collisions else ()
    return record_warnings(record.message_pattern, accepted_collisions=accepted)


class Lookups:
    """A stand-in for the database's collision lookup that records what it was asked."""

    def __init__(self, *found: Collision) -> None:
        self.found = list(found)
        self.asked: list[str] = []

    def __call__(self, pattern: str) -> list[Collision]:
        self.asked.append(pattern)
        return self.found


@pytest.mark.parametrize(
    ("message", "rendered"),
    [
        ("vnode {:#?} not found", "vnode V not found"),
        ("got {} and {name}", "got V and V"),
        ("Error %s at %d (%(where)s)", "Error V at V (V)"),
        ("literal {{braces}}", "literal {braces}"),
        ("line one%nline two %v", "line one\nline two V"),
        ("no placeholders", "no placeholders"),
    ],
)
def test_messages_render_with_sample_values(message: str, rendered: str) -> None:
    assert render_message(message, "V") == rendered


def test_a_pattern_matches_its_message_rendered_with_samples() -> None:
    assert message_is_matched("vnode (.+?) not found", "vnode {:?} not found")
    assert message_is_matched(r"vnode (\d+) not found", "vnode {} not found")  # tightened
    assert not message_is_matched("vnode (.+?) missing", "vnode {} not found")


def test_invalid_pattern_is_refused_with_a_clear_message() -> None:
    record = make_record()
    record.message_pattern = "Backfill progress (unclosed"
    with pytest.raises(ValidationError) as exc:
        record.full_clean()
    messages = exc.value.message_dict["message_pattern"]
    assert any("The matcher cannot use this pattern" in m for m in messages)


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1 backfill progress", r"(?=lookahead) backfill progress", "x{1001} backfill progress"],
)
def test_patterns_no_linear_engine_runs_are_refused(pattern: str) -> None:
    record = make_record()
    record.message_pattern = pattern
    errors = errors_of(record)
    assert "message_pattern" in errors


def test_pattern_that_misses_its_own_message_is_refused() -> None:
    record = make_record()
    record.message_pattern = "Backfill progress for shard (.+?) not found"
    errors = errors_of(record)
    assert "does not match its own message" in errors["message_pattern"][0]


def test_unedited_dataset_records_are_not_rechecked() -> None:
    # The dataset has a few messages with literal "{}" that no rendering reproduces:
    # they must stay editable (solutions, tags...) without touching the pattern.
    record = make_record(
        errorMessage="ISO year '%G' is {} wrong",
        messagePattern="ISO year '%G' is \\{\\} wrong",
    )
    record.solutions = ["Use %Y"]
    assert errors_of(record) == {}


def test_collision_with_another_record_is_refused_until_accepted() -> None:
    other = make_record(
        errorMessage="Connection to {} refused by peer",
        messagePattern="Connection to (.+?) refused by peer",
    )
    record = make_record(
        errorMessage="Connection to {} reset by peer",
        messagePattern="Connection to (.+?) reset by peer",
    )
    record.message_pattern = "Connection to (.+?) (.+?) by peer"
    errors = errors_of(record)
    assert other.id in errors["message_pattern"][0]
    assert "accept collisions" in errors["message_pattern"][0]

    record.accept_collisions = True
    assert errors_of(record) == {}
    assert any(other.id in w for w in warnings_of(record))


def test_collisions_already_there_before_the_edit_are_not_new() -> None:
    make_record(errorMessage="Disk {} is full now", messagePattern="Disk (.+?) is full now")
    record = make_record(
        errorMessage="Disk {} is full now", messagePattern="Disk (.+?) is full now"
    )
    record.message_pattern = "Disk (.+?) is full now"  # unchanged: twin records stay fine
    record.error_message = "Disk {} is full now"
    assert errors_of(record) == {}
    record.message_pattern = r"Disk (\S+) is full now"  # edited, same twin only
    assert errors_of(record) == {}


def test_retired_records_do_not_collide() -> None:
    other = make_record(
        errorMessage="Queue {} overflowed badly", messagePattern="Queue (.+?) overflowed badly"
    )
    ErrorRecord.objects.filter(pk=other.pk).update(status=Status.RETIRED)
    found, complete = ErrorRecord.objects.colliding_with("Queue (.+?) overflowed (.+?)")
    assert complete
    assert found == []


def test_generic_pattern_is_a_warning_not_an_error() -> None:
    record = make_record(errorMessage="not found: {}", messagePattern="not found: (.+?)")
    assert errors_of(record) == {}
    assert any("generic" in w for w in warnings_of(record))


def test_new_record_gets_the_full_check() -> None:
    attrs, _version = parse_record(make_line())
    record = ErrorRecord(**attrs)
    record.message_pattern = "Something (.+?) else entirely different"
    errors = errors_of(record)
    assert "does not match its own message" in errors["message_pattern"][0]


@pytest.mark.parametrize(
    ("pattern", "word"),
    [
        ("Backfill progress for vnode (.+?) not found", "Backfill"),
        ("colou?r of thingamajig", "thingamajig"),
        ("optional|alternatives", ""),
        ("[abcdefghijk]+ tiny", "tiny"),
        ("(maybe group)? fixed", ""),
        (r"file\.txtfile not here", "txtfile"),
        ("value 42 is bad", "value"),
    ],
)
def test_collision_prefilter_uses_only_text_every_match_needs(pattern: str, word: str) -> None:
    assert prefilter_word(pattern) == word


def test_collision_found_when_sample_values_supply_the_text() -> None:
    other = make_record(
        errorMessage="value {} is bad here", messagePattern="value (.+?) is bad here"
    )
    found, _complete = ErrorRecord.objects.colliding_with("value 42 is bad")
    assert [c.id for c in found] == [other.id]


# --- the pure rules, with the database lookups handed in --------------------------------
class Draft:
    """Just the attributes validation reads: no model, no database."""

    def __init__(self, **attrs: Any) -> None:
        dataset_attrs, _version = parse_record(make_line())
        self.__dict__.update(dataset_attrs, accept_collisions=False, **attrs)


PAIR = ("Disk (.+?) is full now", "Disk {} is full now")
TWIN = Collision("twin", "disk-full", "Disk {} is full now")


def test_an_unedited_pattern_and_message_look_nothing_up() -> None:
    lookups = Lookups(TWIN)
    draft = Draft(message_pattern=PAIR[0], error_message=PAIR[1])
    assert validate_record(draft, stored=PAIR, colliding_with=lookups).errors == {}
    draft.error_message = "Disk {} is full now, really"
    assert validate_record(draft, stored=PAIR, colliding_with=lookups).errors == {}
    assert lookups.asked == []  # an edited message alone cannot add collisions


def test_a_new_pattern_is_looked_up_once_and_its_collisions_refused() -> None:
    lookups = Lookups(TWIN)
    draft = Draft(message_pattern=PAIR[0], error_message=PAIR[1])
    result = validate_record(draft, stored=None, colliding_with=lookups)
    assert lookups.asked == [PAIR[0]]
    assert result.collisions == [TWIN]
    assert "twin" in result.errors["message_pattern"][0]
    draft.accept_collisions = True
    accepted = validate_record(draft, stored=None, colliding_with=lookups)
    assert accepted.errors == {}
    assert accepted.collisions == [TWIN]


def test_collisions_the_stored_pattern_had_are_not_new() -> None:
    draft = Draft(message_pattern=r"Disk (\S+) is full now", error_message=PAIR[1])
    result = validate_record(draft, stored=PAIR, colliding_with=Lookups(TWIN))
    assert result == type(result)(errors={}, collisions=[])


def test_a_refused_pattern_is_not_looked_up() -> None:
    lookups = Lookups(TWIN)
    draft = Draft(message_pattern="Disk (unclosed", error_message=PAIR[1])
    assert "message_pattern" in validate_record(draft, stored=None, colliding_with=lookups).errors
    assert lookups.asked == []


def test_collision_search_stops_at_its_budget_and_says_so() -> None:
    rows = [("a", "a", "Disk {} is full now"), ("b", "b", "Disk {} is full now")]
    assert find_collisions(PAIR[0], rows, limit=1) == ([Collision(*rows[0])], True)
    assert find_collisions(PAIR[0], rows, budget_s=-1.0) == ([], False)


def test_unknown_severity_is_refused_by_the_model_field() -> None:
    record = make_record()
    record.severity = "catastrophic"
    with pytest.raises(ValidationError) as exc:
        record.full_clean()
    assert "severity" in exc.value.message_dict


def test_validation_imports_no_models() -> None:
    # Models import validation; the other way round would be a cycle.
    code = "import sys, kb.records.validation; print('kb.records.models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
