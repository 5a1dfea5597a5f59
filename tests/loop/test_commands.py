"""``purge_learning`` and ``export_learning``: the retention applied (or only counted), and
the export written whole, to a file or stdout."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from kb.loop import services
from kb.loop.models import Gap, UsageDay
from tests.factories import make_record

pytestmark = pytest.mark.django_db


def _old_and_new() -> None:
    now = timezone.now()
    services.file_report(text="ERROR Old gizmo failure happened here", now=now - timedelta(days=40))
    services.file_report(text="ERROR Widget frobnication failed for order 7", now=now)
    UsageDay.objects.create(record_id="", day=(now - timedelta(days=40)).date(), misses=1)


def test_purge_uses_the_retention_setting_and_a_dry_run_deletes_nothing(settings: Any) -> None:
    settings.KB_LEARNING_RETENTION_DAYS = 30
    _old_and_new()
    out = io.StringIO()
    call_command("purge_learning", "--dry-run", stdout=out)
    assert "Would delete 1 usage, 0 votes, 1 gaps, 0 proposals" in out.getvalue()
    assert Gap.objects.count() == 2
    call_command("purge_learning", stdout=io.StringIO())
    assert Gap.objects.count() == 1
    assert not UsageDay.objects.exists()
    call_command("purge_learning", "--days", "1", stdout=io.StringIO())
    assert Gap.objects.count() == 1  # reported just now
    with pytest.raises(CommandError):
        call_command("purge_learning", "--days", "0")


def test_export_writes_gaps_and_proposals_to_a_file_or_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = make_record()
    _old_and_new()
    services.propose(record=record, field="solutions", text="Restart the widget")
    target = tmp_path / "learning.jsonl"
    call_command("export_learning", str(target), stderr=io.StringIO())
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["gap", "gap", "proposal"]
    assert not (tmp_path / "learning.jsonl.part").exists()
    call_command("export_learning", "-")
    assert capsys.readouterr().out == target.read_text()
