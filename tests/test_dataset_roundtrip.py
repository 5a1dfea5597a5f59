"""The real dataset in and out: 16,720 records, nothing rejected, nothing changed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.records.models import ErrorRecord
from tests.datasets import ALL_RECORDS, ENRICHED, dataset_path, requires_dataset

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.slow,
    requires_dataset(ALL_RECORDS),
    requires_dataset(ENRICHED),
]


def _run_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("import_records", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_full_dataset_imports_exports_identically_and_reimports_as_unchanged(
    tmp_path: Path,
) -> None:
    source = dataset_path(ALL_RECORDS)
    enriched_file = dataset_path(ENRICHED)
    first = _run_json(str(source))
    assert first["created"] == 16720
    assert first["rejected"] == 0

    target = tmp_path / "export.jsonl"
    call_command("export_records", str(target), stderr=io.StringIO())
    exported = {}
    for line in target.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        exported[obj["record"]["id"]] = obj
    originals = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    assert len(exported) == len(originals)
    assert all(exported[o["record"]["id"]] == o for o in originals)

    again = _run_json(str(source))
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 16720)

    enriched = _run_json(str(enriched_file))
    assert (enriched["updated"], enriched["created"], enriched["rejected"]) == (122, 0, 0)
    assert ErrorRecord.objects.exclude(documentation=None).count() >= 122
