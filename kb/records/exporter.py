"""Export records in the dataset's JSONL shape (the inverse of ``kb.records.importer``), and a
content hash of the stored dataset (what backup, atomicity and idempotency checks compare).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from kb.records.models import ErrorRecord
from kb.records.schema import FIELDS, record_to_line

# Exported with the dataset's fields: everything ``record_to_line`` reads, nothing else.
_EXPORT_ONLY = [f.attr for f in FIELDS] + ["extra", "dataset_version"]


class _Row:
    """Attribute access over a ``values()`` dict (no model instance per record)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values


def export_lines(queryset: Any | None = None, *, chunk_size: int = 2000) -> Iterator[str]:
    """One JSON text per record (no newline), streamed in primary-key order."""
    qs = queryset if queryset is not None else ErrorRecord.objects.all()
    rows = qs.order_by("pk").values(*_EXPORT_ONLY).iterator(chunk_size=chunk_size)
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    for values in rows:
        yield dumps(record_to_line(_Row(values)))


def content_hash(queryset: Any | None = None) -> str:
    """SHA-256 over every record's stored state: its exported line plus the curation
    columns (status, pattern state, curated fields, conflicts), in primary-key order."""
    qs = queryset if queryset is not None else ErrorRecord.objects.all()
    digest = hashlib.sha256()
    extra = ["status", "disabled_reason", "pattern_engine", "curated_fields", "conflicts"]
    rows = qs.order_by("pk").values(*_EXPORT_ONLY, *extra).iterator(chunk_size=2000)
    for values in rows:
        state = {k: values.pop(k) for k in extra}
        digest.update(json.dumps(record_to_line(_Row(values)), sort_keys=True).encode())
        digest.update(json.dumps(state, sort_keys=True, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()


__all__ = ["content_hash", "export_lines"]


def write_export(target: str, write: Callable[[TextIO], int]) -> tuple[int, Path | None]:
    """Run ``write`` on standard output (``target`` ``-``) or on the file ``target``.

    A file is written under a temporary name and moved into place, so a reader never sees
    half of it. Returns what ``write`` counted and the file's path (``None`` for stdout).
    """
    if target == "-":
        count = write(sys.stdout)
        sys.stdout.flush()
        return count, None
    path = Path(target)
    tmp = path.with_name(path.name + ".part")
    with tmp.open("w", encoding="utf-8") as fh:
        count = write(fh)
    tmp.replace(path)
    return count, path
