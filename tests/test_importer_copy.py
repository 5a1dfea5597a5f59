"""The importer's COPY path on PostgreSQL (``kb.records.importer.rows._Table._copy``): new rows go
through ``COPY ... FROM STDIN`` and store exactly what ``executemany`` stored, including
the values COPY's text format has to escape. That a database error in it is still
Django's is ``tests/test_importer_rows.py``'s test, which goes through COPY on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kb.records.importer import rows as rows_module
from kb.records.models import ErrorRecord
from tests.factories import import_lines, make_line
from tests.test_importer_rows import _stored  # what the rows tests compare, the same way

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="COPY is PostgreSQL's (SQLite has no COPY)"
    ),
]

# What COPY's text format escapes or could mistake for its own markers: the NULL marker
# ``\N``, backslashes, tabs, newlines, carriage returns, a lone period line.
AWKWARD = ["\\N", "back\\slash", "tab\there", "two\nlines", "cr\rhere", "\\.", "ü ∑ 😀", ""]


def _lines() -> list[dict]:
    lines = []
    for n in range(250):
        text = AWKWARD[n % len(AWKWARD)]
        lines.append(
            make_line(
                tags=[f"t{n % 5}", text or "empty", f"t{n % 5}"],
                documentation=None if n % 3 else f"doc {n} {text}",
                solutions=[f"step {text}", "\\N"],
            )
        )
    return lines


def _inserts_logged(monkeypatch: pytest.MonkeyPatch, use_copy: bool) -> tuple[int, tuple]:
    """Import the lines with the COPY path on or off: the ``INSERT INTO kb_errorrecord``
    statements Django's cursor ran, and what was stored."""
    monkeypatch.setattr(rows_module, "POSTGRES_COPY", use_copy)
    with CaptureQueriesContext(connection) as queries:
        report = import_lines(*_lines(), source="copy.jsonl", batch_size=100)
    assert (report.created, report.rejected) == (250, 0)
    inserts = sum('INSERT INTO "kb_errorrecord"' in q["sql"] for q in queries.captured_queries)
    return inserts, _stored()


def test_copy_stores_what_executemany_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    inserts_plain, plain = _inserts_logged(monkeypatch, use_copy=False)
    ErrorRecord.objects.all().delete()
    ErrorRecord.history.all().delete()
    inserts_copy, copied = _inserts_logged(monkeypatch, use_copy=True)
    assert inserts_plain > 0
    assert inserts_copy == 0  # the rows went through COPY
    # ids differ (fresh lines each import), so compare everything but the ids
    assert [{**r, "id": None, "slug": None} for r in copied[0]] == [
        {**r, "id": None, "slug": None} for r in plain[0]
    ]
    assert [h[1:] for h in copied[1]] == [h[1:] for h in plain[1]]
    assert [t[1:] for t in copied[2]] == [t[1:] for t in plain[2]]


def test_copy_keeps_every_awkward_value() -> None:
    lines = _lines()
    import_lines(*lines, source="copy.jsonl", batch_size=100)
    records, history, tags = _stored()
    assert records == sorted((line["record"] for line in lines), key=lambda r: r["id"])
    assert [h[0] for h in history] == [line["record"]["id"] for line in lines]
    assert {name for _, name, _ in tags} >= {t for t in AWKWARD if t} | {"empty"}
