"""The parsing half of an import: lines to batches of checked records. Never touches the
database (``SeenIds`` is a private temporary file), so what a line is worth is decided
before anything is written, and the report names each bad line whatever the backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kb.records.importer.lines import MAX_LINE_BYTES, decode_line
from kb.records.importer.report import ImportReport
from kb.records.importer.seen import SeenIds
from kb.records.schema import FieldError, parse_record


def decoded(number: int, raw: bytes) -> dict[str, Any]:
    """The model attrs of line ``number`` (``raw``, not blank), with its dataset version;
    ``FieldError`` naming the first bad field."""
    attrs, version = parse_record(decode_line(raw, number))
    attrs["dataset_version"] = version
    return attrs


@dataclass(slots=True)
class Incoming:
    line: int
    id: str
    attrs: dict[str, Any]  # model attrs as parsed, with the dataset version


class Parser:
    def __init__(self, report: ImportReport) -> None:
        self.report = report  # the import's: rejections go there
        self.pending: dict[str, int] = {}  # ids of the batch being read -> line

    def parse(self, number: int, raw: bytes | None) -> Incoming | None:
        report = self.report
        if raw is None:
            report.reject(number, "-", f"line is longer than {MAX_LINE_BYTES} bytes")
            return None
        if not raw.strip():
            report.reject(number, "-", "blank line")
            return None
        try:
            attrs = decoded(number, raw)
        except FieldError as exc:
            report.reject(number, exc.field, exc.message)
            return None
        record_id = attrs["id"]
        first = self.pending.get(record_id)
        if first is not None:
            report.reject(number, "id", f"duplicate id {record_id!r} (first on line {first})")
            return None
        self.pending[record_id] = number
        return Incoming(number, record_id, attrs)

    def batches(
        self, lines: Iterable[bytes | None], batch_size: int, commit_records: int | None = None
    ) -> Iterator[tuple[list[Incoming], int]]:
        """Parsed batches of good lines, each with the number of the last line read (the
        last one possibly empty, carrying the line count). Touches only the report's
        rejections, never the database. Batches end where a commit of ``commit_records``
        does (so a commit holds that many records, but for in-file duplicates)."""
        seen = SeenIds()  # ids of earlier batches, on disk
        align = commit_records or batch_size
        try:
            batch: list[Incoming] = []
            number = batched = 0
            size = min(batch_size, align)
            for number, raw in enumerate(lines, start=1):
                item = self.parse(number, raw)
                if item is not None:
                    batch.append(item)
                if len(batch) >= size:
                    batched += len(batch)
                    yield self.drop_earlier_duplicates(batch, seen), number
                    batch, size = [], min(batch_size, align - batched % align)
            if batch:
                batch = self.drop_earlier_duplicates(batch, seen)
            yield batch, number
        finally:
            seen.close()

    def drop_earlier_duplicates(self, batch: list[Incoming], seen: SeenIds) -> list[Incoming]:
        """Reject lines whose id an earlier batch had; remember this batch's ids."""
        pending, self.pending = self.pending, {}
        earlier = seen.first_lines(list(pending))
        seen.add((i, n) for i, n in pending.items() if i not in earlier)
        if not earlier:
            return batch
        kept = []
        for item in batch:
            first = earlier.get(item.id)
            if first is None:
                kept.append(item)
            else:
                self.report.reject(
                    item.line, "id", f"duplicate id {item.id!r} (first on line {first})"
                )
        return kept
