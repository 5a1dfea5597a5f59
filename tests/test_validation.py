"""Record validation in the model's clean(): what the admin, importer and API share."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from kb.models import ErrorRecord, Status
from kb.schema import parse_record
from kb.validation import (
    find_collisions,
    message_is_matched,
    prefilter_word,
    record_warnings,
    render_message,
    validate_record,
)
from tests.factories import make_line, make_record

pytestmark = pytest.mark.django_db


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
    errors = validate_record(record)
    assert "message_pattern" in errors


def test_pattern_that_misses_its_own_message_is_refused() -> None:
    record = make_record()
    record.message_pattern = "Backfill progress for shard (.+?) not found"
    errors = validate_record(record)
    assert "does not match its own message" in errors["message_pattern"][0]


def test_unedited_dataset_records_are_not_rechecked() -> None:
    # The dataset has a few messages with literal "{}" that no rendering reproduces:
    # they must stay editable (solutions, tags...) without touching the pattern.
    record = make_record(
        errorMessage="ISO year '%G' is {} wrong",
        messagePattern="ISO year '%G' is \\{\\} wrong",
    )
    record.solutions = ["Use %Y"]
    assert validate_record(record) == {}


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
    errors = validate_record(record)
    assert other.id in errors["message_pattern"][0]
    assert "accept collisions" in errors["message_pattern"][0]

    record.accept_collisions = True
    assert validate_record(record) == {}
    assert any(other.id in w for w in record_warnings(record))


def test_collisions_already_there_before_the_edit_are_not_new() -> None:
    make_record(errorMessage="Disk {} is full now", messagePattern="Disk (.+?) is full now")
    record = make_record(
        errorMessage="Disk {} is full now", messagePattern="Disk (.+?) is full now"
    )
    record.message_pattern = "Disk (.+?) is full now"  # unchanged: twin records stay fine
    record.error_message = "Disk {} is full now"
    assert validate_record(record) == {}
    record.message_pattern = r"Disk (\S+) is full now"  # edited, same twin only
    assert validate_record(record) == {}


def test_retired_records_do_not_collide() -> None:
    other = make_record(
        errorMessage="Queue {} overflowed badly", messagePattern="Queue (.+?) overflowed badly"
    )
    ErrorRecord.objects.filter(pk=other.pk).update(status=Status.RETIRED)
    found, complete = find_collisions("Queue (.+?) overflowed (.+?)")
    assert complete
    assert found == []


def test_generic_pattern_is_a_warning_not_an_error() -> None:
    record = make_record(errorMessage="not found: {}", messagePattern="not found: (.+?)")
    assert validate_record(record) == {}
    assert any("generic" in w for w in record_warnings(record))


def test_new_record_gets_the_full_check() -> None:
    attrs, _version = parse_record(make_line())
    record = ErrorRecord(**attrs)
    record.message_pattern = "Something (.+?) else entirely different"
    errors = validate_record(record)
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
    found, _complete = find_collisions("value 42 is bad")
    assert [c.id for c in found] == [other.id]
