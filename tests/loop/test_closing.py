"""Gap closing (`kb.loop.closing`): every place that publishes a record closes the gaps it
answers, by an explicit call and after its commit: an import (the real importer, its
own transactions, a real database), `set_status` and a curator's save; a dry run and a
rolled-back import close nothing."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from kb.loop import services
from kb.loop.models import Gap
from kb.matching.holder import holder
from kb.records.models import ErrorRecord, Status
from kb.records.services import set_status
from tests.factories import encode, import_lines, make_line

pytestmark = pytest.mark.django_db(transaction=True)

REPORTED = "ERROR Flux capacitor overheated at 88 mph on road 5 near Hill Valley"


def line_answering(gap: Gap, **overrides: object) -> dict:
    pattern = services.draft_from_gap(gap=gap)["message_pattern"]
    return make_line(messagePattern=pattern, errorMessage=gap.template, **overrides)


def test_an_import_that_publishes_a_matching_record_closes_the_gap(tmp_path) -> None:
    gap = services.file_report(text=REPORTED).gap
    other = services.file_report(text="ERROR Some unrelated gizmo fell over completely").gap
    line = line_answering(gap)
    path = tmp_path / "new.jsonl"
    path.write_bytes(b"\n".join(encode(line)) + b"\n")

    call_command("import_records", str(path), "--json")

    gap.refresh_from_db()
    assert gap.closed_by_id == line["record"]["id"]
    assert gap.closed_at is not None
    other.refresh_from_db()
    assert other.is_open


def test_a_dry_run_or_an_unpublished_import_closes_nothing() -> None:
    gap = services.file_report(text=REPORTED).gap
    import_lines(line_answering(gap), dry_run=True)
    assert Gap.objects.get(pk=gap.pk).is_open
    bad = line_answering(gap)
    rejected = {"record": {"id": "not valid"}}
    report = import_lines(bad, rejected, atomic=True)  # rolled back whole
    assert report.rolled_back
    assert not ErrorRecord.objects.filter(pk=bad["record"]["id"]).exists()
    assert Gap.objects.get(pk=gap.pk).is_open


def test_publishing_a_draft_with_set_status_closes_its_gap() -> None:
    gap = services.file_report(text=REPORTED).gap
    line = line_answering(gap)
    import_lines(line)
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    assert Gap.objects.get(pk=gap.pk).closed_by_id == record.pk  # the import closed it
    set_status([record], Status.DRAFT)
    Gap.objects.filter(pk=gap.pk).update(closed_at=None, closed_by=None)
    holder.expire()
    assert services.close_matched_gaps() == 0  # a draft answers nothing
    set_status([ErrorRecord.objects.get(pk=record.pk)], Status.PUBLISHED)
    assert Gap.objects.get(pk=gap.pk).closed_by_id == record.pk
