"""The upgrade path on the real dataset: 16,720 records with curator edits and their
history, SQLite -> SQLite -> PostgreSQL (when a server is there), ``export_records``
identical at every step."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.records.models import ErrorRecord, HistoricalErrorRecord
from tests.copy_support import (
    curate,
    exported,
    fresh_postgres_database,
    history_rows,
    opened,
    postgres_server,
)
from tests.curation_support import make_curator
from tests.datasets import ALL_RECORDS, dataset_path, requires_dataset

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    requires_dataset(ALL_RECORDS),
]


def copy(source: str, target: str) -> dict:
    out = io.StringIO()
    call_command("copy_database", "--source", source, "--target", target, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_full_dataset_with_curator_history_copies_with_an_identical_export(
    tmp_path: Path,
) -> None:
    call_command("import_records", str(dataset_path(ALL_RECORDS)), stdout=io.StringIO())
    assert ErrorRecord.objects.count() == 16720
    curator = make_curator()
    curate(list(ErrorRecord.objects.order_by("?")[:40]), curator)
    before = exported("default")
    history = history_rows("default")
    assert len(history) > 16720  # the import's rows and the curator's

    sqlite = f"sqlite:///{tmp_path / 'single-host.sqlite3'}"
    assert copy("default", sqlite)["rows"]["kb.HistoricalErrorRecord"] == len(history)
    with opened("host", sqlite) as host:
        assert exported(host) == before
        assert history_rows(host) == history
    try:
        postgres_server()
    except pytest.skip.Exception:
        return  # SQLite -> SQLite done; the PostgreSQL step needs a server
    with fresh_postgres_database() as postgres:
        summary = copy(sqlite, postgres)
        assert summary["rows"]["kb.ErrorRecord"] == 16720
        with opened("pg", postgres) as pg:
            assert exported(pg) == before
            assert history_rows(pg) == history
            assert HistoricalErrorRecord.objects.using(pg).filter(history_user__isnull=False)
