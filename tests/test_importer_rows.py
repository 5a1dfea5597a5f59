"""Row writes in bulk (``kb.records.importer.rows``): multi-row statements on SQLite store what
one statement per row stored, in file order, across statement and batch boundaries."""

from __future__ import annotations

import pytest
from django.db import connection

from kb.records.importer import rows as rows_module
from kb.records.models import ErrorRecord, RecordTag
from kb.records.schema import record_to_dataset
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db

COUNT = 2 * rows_module.MAX_ROWS_PER_INSERT + 37  # several full statements and a short one


def _lines() -> list[dict]:
    lines = []
    for n in range(COUNT):
        tags = [f"t{n % 7}", "shared", f"t{n % 7}", f"u{n}"]  # a repeat: indexed once
        lines.append(make_line(tags=tags, documentation=None if n % 3 else f"doc {n} 100%s"))
    return lines


def _stored() -> tuple[list, list, list]:
    records = [record_to_dataset(r) for r in ErrorRecord.objects.order_by("id")]
    history = list(
        ErrorRecord.history.order_by("history_id").values_list(
            "id", "history_type", "history_change_reason", "history_user_id"
        )
    )
    tags = list(RecordTag.objects.order_by("id").values_list("record_id", "tag__name", "position"))
    return records, history, tags


def test_bulk_rows_are_stored_in_file_order_across_statements_and_batches() -> None:
    lines = _lines()
    report = import_lines(*lines, source="bulk.jsonl", batch_size=150)
    assert (report.created, report.rejected) == (COUNT, 0)
    records, history, tags = _stored()
    assert records == sorted((line["record"] for line in lines), key=lambda r: r["id"])
    ids = [line["record"]["id"] for line in lines]
    assert history == [(i, "+", "import:bulk.jsonl", None) for i in ids]
    expected_tags = []
    for line in lines:
        first = line["record"]["tags"]
        expected_tags += [
            (line["record"]["id"], name, pos)
            for pos, name in enumerate(first)
            if name not in first[:pos]
        ]
    assert tags == expected_tags


def test_bulk_rows_match_one_statement_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same file through ``executemany`` (one statement per row) stores the same."""
    lines = _lines()
    import_lines(*lines, source="bulk.jsonl", batch_size=150)
    bulk = _stored()
    ErrorRecord.objects.all().delete()
    ErrorRecord.history.all().delete()

    def one_per_row(self: rows_module._Table, cursor: object, rows: list) -> None:
        if rows:
            cursor.executemany(self.insert_sql(), rows)

    monkeypatch.setattr(rows_module._Table, "insert", one_per_row)
    import_lines(*lines, source="bulk.jsonl", batch_size=150)
    assert _stored() == bulk


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statement size limit")
def test_a_low_variable_limit_still_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    connection.ensure_connection()
    raw = connection.connection
    before = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 100)  # two record rows a statement
    connection.features.__dict__.pop("max_query_params", None)
    try:
        report = import_lines(*[make_line() for _ in range(5)])
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, before)
        connection.features.__dict__.pop("max_query_params", None)
    assert report.created == 5


def test_a_database_error_in_a_bulk_insert_is_djangos() -> None:
    from django.db import IntegrityError, transaction

    import_lines(make_line(tags=["a"]))
    record_id = ErrorRecord.objects.get().id
    writer = rows_module.RowWriter("x.jsonl")
    tag_id = RecordTag.objects.get().tag_id
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        writer.tags.insert(cursor, [[record_id, tag_id, 0]])  # (record, tag) is unique
