"""A record reported from the field has no source location: "Create a record from this gap"
saves with repository, file path and line numbers left empty (the form says they are
optional), the record page says where it came from, and the export/import round trip
gives back the same JSON (docs/curating.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from kb.loop.models import Gap
from kb.records.models import ErrorRecord
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client
from tests.factories import import_lines

pytestmark = pytest.mark.django_db

ADD = "admin:kb_errorrecord_add"
NO_SOURCE = "Reported from the field; no source location"


def gap() -> Gap:
    now = timezone.now()
    return Gap.objects.create(
        key="widget-frob",
        template="Widget frobnication failed for order <*>",
        count=3,
        first_seen=now - timedelta(days=1),
        last_seen=now,
        samples=["Widget frobnication failed for order 42"],
    )


def add_form_data(client: Client, gap_id: int) -> dict[str, str]:
    """What a curator submits: the prefilled add form as it is, nothing typed in."""
    response = client.get(reverse(ADD), {"gap": gap_id})
    assert response.status_code == 200
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        value = value() if callable(value) else value
        if value is None:
            continue
        if isinstance(value, dict):
            data[name] = json.dumps(value)
        else:
            data[name] = ", ".join(value) if isinstance(value, list) else str(value)
    data.setdefault("error_type", "runtime")
    return data


def test_a_record_from_a_gap_needs_no_source_location(curator_client: Client) -> None:
    draft = gap()
    html = curator_client.get(reverse(ADD), {"gap": draft.pk}).content.decode()
    assert "optional" in html.lower()  # the form says what may stay empty
    data = add_form_data(curator_client, draft.pk)
    for name in ("repo", "file_path", "line_number", "source_code_start", "source_code_end"):
        assert not data.get(name), name  # nothing of a source location is filled in
    response = curator_client.post(reverse(ADD), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    record = ErrorRecord.objects.get(pk=f"gap-{draft.pk}")
    assert (record.repo, record.file_path, record.line_number) == ("", "", None)

    record.status = "published"
    record.save()
    page = Client().get(reverse("record_detail", args=[record.pk])).content.decode()
    assert NO_SOURCE in page
    assert ":None" not in page


def test_a_field_record_round_trips_through_export_and_import(tmp_path: object) -> None:
    line = {
        "record": {
            "id": "field-0001",
            "repo": "",
            "slug": "widget-frobnication-failed",
            "errorCode": None,
            "errorMessage": "Widget frobnication failed for order {}",
            "messagePattern": "Widget frobnication failed for order (.+?)",
            "errorType": "runtime",
            "errorClass": None,
            "httpStatus": None,
            "severity": "error",
            "filePath": "",
            "lineNumber": None,
            "sourceCode": "",
            "sourceCodeStart": None,
            "sourceCodeEnd": None,
            "githubUrl": "",
            "documentation": None,
            "triggerScenarios": None,
            "commonSituations": None,
            "solutions": [],
            "exampleFix": None,
            "handlingStrategy": None,
            "validationCode": None,
            "typeGuard": None,
            "tryCatchPattern": None,
            "preventionTips": [],
            "tags": [],
            "backgroundTag": None,
            "analyzedSha": "",
            "analyzedAt": None,
            "contentChangedAt": None,
            "schemaVersion": 2,
        },
        "datasetVersion": "2026-11-30T00:00:00.000Z",
    }
    report = import_lines(line)
    assert (report.created, report.rejected) == (1, 0), report.errors
    dump = Path(str(tmp_path)) / "dump.jsonl"
    call_command("export_records", str(dump), stdout=StringIO())
    exported = [json.loads(x) for x in dump.read_text().splitlines()]
    assert exported == [line]
    again = import_lines(*(json.dumps(x) + "\n" for x in exported))
    assert (again.unchanged, again.rejected) == (1, 0)
