"""Export: the dataset's JSONL back, JSON-identical for every record not edited since."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.records.exporter import content_hash, export_lines
from kb.records.models import ErrorRecord
from kb.records.services import save_curated
from tests.factories import FIXTURES, import_lines, make_line

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo-records.jsonl"


def _demo_lines() -> list[bytes]:
    return DEMO.read_bytes().splitlines(keepends=True)


def test_demo_fixture_exports_identical_json_objects_with_the_same_key_order(
    tmp_path: Path,
) -> None:
    lines = _demo_lines()
    report = import_lines(*lines)
    assert report.rejected == 0
    target = tmp_path / "out.jsonl"
    call_command("export_records", str(target), stderr=io.StringIO())

    originals = {json.loads(x)["record"]["id"]: json.loads(x) for x in lines}
    exported = [json.loads(x) for x in target.read_text(encoding="utf-8").splitlines()]
    assert len(exported) == len(originals)
    for obj in exported:
        original = originals[obj["record"]["id"]]
        assert obj == original
        assert list(obj["record"]) == list(original["record"])


def test_export_to_stdout_matches_export_to_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_lines(*[make_line() for _ in range(3)])
    target = tmp_path / "out.jsonl"
    call_command("export_records", str(target), stderr=io.StringIO())
    capsys.readouterr()
    call_command("export_records", "-")
    assert capsys.readouterr().out == target.read_text(encoding="utf-8")


def test_unknown_keys_of_a_newer_dataset_version_survive_the_round_trip() -> None:
    line = make_line(futureField={"nested": [1, 2.5, "x", None]}, anotherOne="kept")
    import_lines(line)
    (text,) = export_lines()
    assert json.loads(text) == line


def test_an_edited_record_exports_the_curators_value() -> None:
    line = make_line(solutions=["from the dataset"])
    import_lines(line)
    record = ErrorRecord.objects.get()
    record.solutions = ["curated"]
    save_curated(record, changed_attrs=["solutions"])
    (text,) = export_lines()
    assert json.loads(text)["record"]["solutions"] == ["curated"]


def test_export_then_reimport_changes_nothing(tmp_path: Path) -> None:
    import_lines(*_demo_lines()[:100])
    before = content_hash()
    target = tmp_path / "out.jsonl"
    call_command("export_records", str(target), stderr=io.StringIO())
    report = import_lines(*target.read_bytes().splitlines(keepends=True))
    assert (report.created, report.updated, report.unchanged) == (0, 0, 100)
    assert content_hash() == before


def test_seed_record_round_trips_exactly() -> None:
    seed = (FIXTURES / "seed-record.jsonl").read_bytes()
    import_lines(seed)
    (text,) = export_lines()
    assert json.loads(text) == json.loads(seed)
