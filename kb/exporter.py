"""Export records in the dataset's JSONL shape (the inverse of ``kb.importer``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from kb.models import ErrorRecord
from kb.schema import record_to_line


def export_lines(queryset: object | None = None, *, chunk_size: int = 2000) -> Iterator[str]:
    """One JSON text per record (no newline), streamed in primary-key order."""
    qs = queryset if queryset is not None else ErrorRecord.objects.all()
    for record in qs.order_by("pk").iterator(chunk_size=chunk_size):  # type: ignore[attr-defined]
        yield json.dumps(record_to_line(record), ensure_ascii=False)
