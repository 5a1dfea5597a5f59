"""The indexes an import pays for: only those some query needs (migration 0008).

History is read per record (admin history page, ``record.history``, the change list's
last-edit subquery) newest first, so ``id`` and ``history_date`` stay indexed; the filter
indexes simple-history would copy from the record do not exist. Record lookups on ``repo``
and ``status`` use the leading column of a composite index, ``severity`` has no index
(0012), and tag rows of a record use the unique (record, tag) index.
"""

from __future__ import annotations

import pytest
from django.db import connection

from kb.records.models import ErrorRecord, RecordTag

pytestmark = pytest.mark.django_db


def _indexed_column_lists(model: type) -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return [
        c["columns"] for c in constraints.values() if (c["index"] or c["unique"]) and c["columns"]
    ]


def test_history_keeps_the_indexes_its_reads_use() -> None:
    indexed = _indexed_column_lists(ErrorRecord.history.model)
    for needed in (["id"], ["history_date"]):
        assert needed in indexed
    for dropped in ("repo", "slug", "error_code", "error_type", "error_class", "severity"):
        assert [dropped] not in indexed
    assert ["handling_strategy"] not in indexed
    assert ["background_tag"] not in indexed
    assert ["status"] not in indexed


def test_record_lookups_keep_a_leading_index_column() -> None:
    indexed = _indexed_column_lists(ErrorRecord)
    leading = {columns[0] for columns in indexed}
    for column in ("id", "repo", "status", "slug", "error_type", "error_class"):
        assert column in leading, column
    # Three values on 10-75% of the records each: walking an ordered index is cheaper
    # (migration 0012; the plans are in tests/test_query_plans.py).
    assert "severity" not in leading
    assert ["repo"] not in indexed
    assert ["status"] not in indexed
    tag_rows = _indexed_column_lists(RecordTag)
    assert ["record_id", "tag_id"] in tag_rows
    assert ["record_id"] not in tag_rows
    assert any(columns[0] == "tag_id" for columns in tag_rows)


def test_record_history_page_reads_newest_first() -> None:
    record = ErrorRecord.objects.create(
        id="idx-1",
        repo="r",
        slug="s",
        file_path="f",
        line_number=1,
        source_code_start=1,
        source_code_end=1,
        error_message="m",
        message_pattern="m",
        error_type="t",
        severity="error",
    )
    record.slug = "s2"
    record.save()
    assert [h.history_type for h in record.history.all()] == ["~", "+"]
