"""Plain factories: a valid dataset record, and model instances built from it."""

from __future__ import annotations

import copy
import json
from itertools import count
from pathlib import Path
from typing import Any

from kb.records.importer import import_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_ids = count(1)

SEED: dict[str, Any] = json.loads((FIXTURES / "seed-record.jsonl").read_text())


def make_line(**overrides: Any) -> dict[str, Any]:
    """A dataset line (``{"record": ..., "datasetVersion": ...}``) with a fresh id."""
    line = copy.deepcopy(SEED)
    n = next(_ids)
    line["record"]["id"] = f"test{n:012d}"
    line["record"]["slug"] = f"test-record-{n}"
    version = overrides.pop("datasetVersion", None)
    line["record"].update(overrides)
    if version is not None:
        line["datasetVersion"] = version
    return line


def encode(*lines: dict[str, Any] | str | bytes) -> list[bytes]:
    out = []
    for line in lines:
        if isinstance(line, bytes):
            out.append(line)
        elif isinstance(line, str):
            out.append(line.encode())
        else:
            out.append(json.dumps(line).encode() + b"\n")
    return out


def import_lines(*lines: dict[str, Any] | str | bytes, **kwargs: Any) -> Any:
    return import_jsonl(encode(*lines), **kwargs)


def make_record(**overrides: Any) -> Any:
    """Store one record through the importer (the same path as real data)."""
    from kb.records.models import ErrorRecord

    line = make_line(**overrides)
    report = import_lines(line)
    assert report.rejected == 0, report.errors
    return ErrorRecord.objects.get(pk=line["record"]["id"])


def fail_nth_write(monkeypatch: Any, nth: int) -> None:
    """Make the importer's ``nth`` batch write raise a ``DatabaseError`` (a disk error in
    the middle of an import); the others write as usual."""
    from django.db import DatabaseError

    from kb.records.importer.rows import RowWriter

    original = RowWriter.write
    calls = []

    def write(self: RowWriter, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == nth:
            raise DatabaseError("disk I/O error")
        original(self, *args, **kwargs)

    monkeypatch.setattr(RowWriter, "write", write)


def stored_state() -> tuple:
    """Everything an import stores, for comparing two ways of importing: records (but
    their write stamps), history rows, tag rows in order, tag names in order."""
    from kb.records.models import ErrorRecord, RecordTag, Tag

    records = list(ErrorRecord.objects.order_by("id").values())
    for r in records:
        for stamp in ("revision", "created_at", "updated_at"):
            r.pop(stamp)
    history = list(
        ErrorRecord.history.order_by("history_id").values_list(
            "id",
            "history_type",
            "history_change_reason",
            "history_user_id",
            "tags",
            "solutions",
            "conflicts",
        )
    )
    tags = list(RecordTag.objects.order_by("id").values_list("record_id", "tag__name", "position"))
    names = list(Tag.objects.order_by("id").values_list("name", flat=True))
    return records, history, tags, names


def clear_records() -> None:
    """Records, their history and every tag gone (a second import starts afresh)."""
    from kb.records.models import ErrorRecord, Tag

    ErrorRecord.objects.all().delete()
    ErrorRecord.history.all().delete()
    Tag.objects.all().delete()
