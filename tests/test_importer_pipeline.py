"""The import's moving parts: bulk rows that store what the ORM stores, commits of
several batches, the search index kept per batch, and unchanged records recognised from
their stored columns. Each must store exactly what the plain path stores and leave
nothing half-written when it stops early."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import pytest
from django.db import DatabaseError, connection
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from kb.records.exporter import content_hash
from kb.records.importer import core, import_jsonl
from kb.records.importer import rows as rows_module
from kb.records.models import ErrorRecord, RecordTag
from kb.records.services import sync_tags
from tests.factories import (
    clear_records,
    encode,
    fail_nth_write,
    import_lines,
    make_line,
    stored_state,
)

# --- the import loop ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_read_error_mid_file_reaches_the_caller_as_itself() -> None:
    def lines() -> Iterator[bytes]:
        yield from encode(*[make_line() for _ in range(5)])
        raise OSError("unreadable")

    with pytest.raises(OSError, match="unreadable"):
        import_jsonl(lines(), batch_size=2)


# --- the bulk rows store what the ORM's own bulk writes store ---------------------------


def _lines() -> list[dict]:
    lines = []
    for n in range(23):
        tags = [f"t{n % 4}", "shared", f"t{n % 4}", f'ünï "q" \\ {n % 3}', f"u{n}"]
        lines.append(make_line(tags=tags, documentation=None if n % 3 else f"doc {n}"))
    lines.append(make_line(tags=[], messagePattern="(a)\\1"))  # refused: stored disabled
    return lines


def _import_then_update(lines: list[dict]) -> tuple:
    first = import_lines(*lines[:10], source="a.jsonl", batch_size=4)
    changed = json.loads(json.dumps(lines[:3]))
    for line in changed:  # new content and new tags, in a batch with new records
        line["record"]["tags"] = ["brand new", "shared"]
        line["record"]["contentChangedAt"] = "2031-01-01T00:00:00.000Z"
    second = import_lines(*changed, *lines[10:], source="a.jsonl", batch_size=5)
    counts = [(r.created, r.updated, r.unchanged, r.disabled) for r in (first, second)]
    return counts, stored_state()


def _orm_write(
    self: rows_module.RowWriter,
    created: list[dict],
    updated: list[dict],
    retag: list[dict],
    now: datetime,
) -> None:
    """The plain path the bulk rows were measured against: model instances,
    django-simple-history's bulk writes and ``sync_tags``."""
    new = [ErrorRecord(**row) for row in created]
    changed = [ErrorRecord(**row) for row in updated]
    history = {"default_change_reason": self.reason, "default_date": now}
    bulk_create_with_history(new, ErrorRecord, **history)
    kept = {"id", "created_at"}
    fields = [f.name for f in ErrorRecord._meta.concrete_fields if f.name not in kept]
    bulk_update_with_history(changed, ErrorRecord, fields=fields, **history)
    retagged = {row["id"] for row in retag}
    sync_tags([*new, *(record for record in changed if record.pk in retagged)])


@pytest.mark.django_db
def test_bulk_rows_store_what_the_orm_bulk_writes_store(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines()
    bulk = _import_then_update(lines)
    clear_records()
    monkeypatch.setattr(rows_module.RowWriter, "write", _orm_write)
    assert _import_then_update(lines) == bulk


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("failing", "kept"), [(2, 0), (3, 10), (5, 20)])
def test_batches_commit_together_up_to_commit_records(
    monkeypatch: pytest.MonkeyPatch, failing: int, kept: int
) -> None:
    """Two batches of 5 to a commit: a failure keeps every earlier whole commit, with its
    history, and nothing of the one it hit."""
    fail_nth_write(monkeypatch, failing)
    with pytest.raises(DatabaseError):
        import_lines(*[make_line() for _ in range(30)], batch_size=5, commit_records=10)
    assert ErrorRecord.objects.count() == kept
    assert ErrorRecord.history.count() == kept
    assert RecordTag.objects.values("record_id").distinct().count() == kept


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's search index")
@pytest.mark.django_db
def test_new_records_are_indexed_once_each_with_their_text() -> None:
    lines = [make_line(errorMessage=f"unique marker {n} boom") for n in range(17)]
    import_lines(*lines[:5], batch_size=3)
    changed = json.loads(json.dumps(lines[0]))
    changed["record"]["errorMessage"] = "changed marker boom"
    changed["record"]["contentChangedAt"] = "2031-01-01T00:00:00.000Z"
    import_lines(changed, *lines[5:], batch_size=4)  # an update beside new records
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.id, f.message, f.slug FROM kb_errorrecord r "
            "JOIN kb_record_search_map m ON m.record_id = r.id "
            "JOIN kb_record_fts f ON f.rowid = m.fts_rowid ORDER BY r.id"
        )
        indexed = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM kb_record_fts")
        fts_rows = cursor.fetchone()[0]
    stored = list(ErrorRecord.objects.order_by("id").values_list("id", "error_message", "slug"))
    assert indexed == stored
    assert fts_rows == len(stored) == 17
    assert "changed marker boom" in [message for _i, message, _s in indexed]


# --- unchanged records recognised from their stored columns -------------------------------


@pytest.mark.skipif(connection.vendor != "sqlite", reason="raw comparison is SQLite's")
@pytest.mark.django_db
def test_a_stored_record_gives_back_the_key_of_its_line() -> None:
    from kb.records.schema import parse_record

    lines = [make_line(tags=["é", "x"], httpStatus=None), make_line(newKey={"a": [1, 2.5]})]
    import_lines(*lines)
    writer = rows_module.RowWriter("x", core.COMPARED_ATTRS)
    stored = writer.stored([line["record"]["id"] for line in lines])
    for line in lines:
        attrs, version = parse_record(line)
        attrs["dataset_version"] = version
        assert writer.key(attrs) == stored[line["record"]["id"]]


@pytest.mark.django_db
def test_stored_values_that_differ_only_in_form_are_still_unchanged() -> None:
    """Raw columns that differ but mean the same (sub-millisecond time, other JSON
    spacing) take the full comparison, which finds them equal: nothing is written."""
    from datetime import timedelta

    lines = [make_line(tags=["a", "b"]) for _ in range(3)]
    import_lines(*lines)
    first, second = (line["record"]["id"] for line in lines[:2])
    record = ErrorRecord.objects.get(pk=first)
    ErrorRecord.objects.filter(pk=first).update(
        analyzed_at=record.analyzed_at + timedelta(microseconds=300)
    )
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute('UPDATE kb_errorrecord SET tags = \'["a","b"]\' WHERE id = %s', [second])
    before = (content_hash(), ErrorRecord.history.count())
    report = import_lines(*lines)
    assert (report.unchanged, report.updated, report.created) == (3, 0, 0)
    assert (content_hash(), ErrorRecord.history.count()) == before


@pytest.mark.django_db
def test_a_changed_field_is_seen_whatever_its_kind() -> None:
    from kb.records.schema import FIELDS

    changes = {
        "str": "something else",
        "int": 7,
        "list": ["other"],
        "datetime": "2031-02-03T04:05:06.789Z",
        "history": {"wordings": [{"message": "an older wording", "pattern": "older"}]},
    }
    for field in FIELDS:
        if field.key in {"id", "contentChangedAt"}:
            continue
        line = make_line(contentChangedAt="2030-01-01T00:00:00.000Z")
        import_lines(line)
        changed = json.loads(json.dumps(line))
        changed["record"][field.key] = changes[field.kind]
        report = import_lines(changed)
        assert report.updated == 1, field.key
