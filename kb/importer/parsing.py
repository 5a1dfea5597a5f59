"""The parsing half of an import: lines to batches of checked records, each with the row it
would be created as. Never touches the database (``SeenIds`` is a private temporary file),
so it can run in a forked process beside the writer (``kb.importer.ahead``); ``pack`` and
``unpack`` are the two ends of that process's pipe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kb.importer.admission import admit_batch
from kb.importer.lines import MAX_LINE_BYTES, decode_line, fast_decode
from kb.importer.report import ImportReport
from kb.importer.rows import RowWriter
from kb.importer.seen import SeenIds
from kb.models import ErrorRecord, Status
from kb.schema import FieldError, parse_plain_record, parse_record
from kb.validation import PatternVerdict


def decoded(number: int, raw: bytes) -> dict[str, Any]:
    """The model attrs of line ``number`` (``raw``, not blank), with its dataset version;
    ``FieldError`` naming the first bad field."""
    # A NUL or lone surrogate can only enter a string through a ``\u`` escape (strict
    # UTF-8 refuses encoded surrogates, strict JSON raw control characters).
    escapes = b"\\u" in raw
    plain = None if escapes else fast_decode(raw)
    if plain is not None:  # see kb.importer.lines: only through parse_plain_record
        plain = parse_plain_record(plain)
    attrs, version = plain or parse_record(decode_line(raw, number), text_safe=not escapes)
    attrs["dataset_version"] = version
    return attrs


@dataclass(slots=True)
class Incoming:
    line: int
    id: str
    raw: bytes  # the line
    # As parsed; ``None`` while it comes from the parser process, until a stored record
    # with other content needs it (``values``): see ``Parser.pack``.
    attrs: dict[str, Any] | None
    # Worked out when the batch is parsed (see ``Parser.prepare``): the row this record
    # would be created as, and its parameters.
    new_row: dict[str, Any] | None = None
    params: list[Any] | None = None
    # The compared columns as bound parameters (``RowWriter.key``): equal to the stored
    # ones means unchanged, without fetching and converting the stored record.
    key: Any = None

    def values(self) -> dict[str, Any]:
        if self.attrs is None:
            self.attrs = decoded(self.line, self.raw)
        return self.attrs


def set_verdict(row: dict[str, Any], verdict: PatternVerdict) -> None:
    row["disabled_reason"] = "" if verdict.ok else verdict.reason or "pattern refused"
    row["pattern_engine"] = verdict.engine if verdict.ok else ""


class Parser:
    def __init__(self, report: ImportReport, writer: RowWriter, *, dry_run: bool) -> None:
        self.report = report  # the import's: rejections go there
        self.writer = writer  # for the row and key forms only
        self.dry_run = dry_run
        self.pending: dict[str, int] = {}  # ids of the batch being read -> line
        # Prepare new rows while parsing? Off while batches are mostly stored records (a
        # re-import), where the work would be thrown away; the writer updates it.
        self.prepare_rows = True
        self.unstamped = dict.fromkeys(writer.stamped)
        attnames = writer.records.attnames
        self.verdict_params = (attnames.index("disabled_reason"), attnames.index("pattern_engine"))
        # Immutable defaults only: JSON columns get fresh containers per row (``new_row``).
        self.defaults = {
            f.attname: f.get_default()
            for f in ErrorRecord._meta.concrete_fields
            if (f.has_default() or f.null) and f.get_internal_type() != "JSONField"
        }

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
        return Incoming(number, record_id, raw, attrs)

    def batches(
        self,
        lines: Iterable[bytes | None],
        batch_size: int,
        commit_records: int | None = None,
        first_size: int | None = None,
    ) -> Iterator[tuple[list[Incoming], int]]:
        """Parsed batches of good lines, each with the number of the last line read (the
        last one possibly empty, carrying the line count). Touches only the report's
        rejections, never the database. Batches end where a commit of ``commit_records``
        does (so a commit holds that many records, but for in-file duplicates);
        ``first_size``: a smaller first batch (the writer of ``kb.importer.ahead`` waits
        for it)."""
        seen = SeenIds()  # ids of earlier batches, on disk
        align = commit_records or batch_size
        try:
            batch: list[Incoming] = []
            number = batched = 0
            size = min(first_size or batch_size, batch_size, align)
            for number, raw in enumerate(lines, start=1):
                item = self.parse(number, raw)
                if item is not None:
                    batch.append(item)
                if len(batch) >= size:
                    batched += len(batch)
                    yield self.prepare(self.drop_earlier_duplicates(batch, seen)), number
                    batch, size = [], min(batch_size, align - batched % align)
            if batch:
                batch = self.prepare(self.drop_earlier_duplicates(batch, seen))
            yield batch, number
        finally:
            seen.close()

    def prepare(self, batch: list[Incoming]) -> list[Incoming]:
        """Admit the batch's patterns and build each record's row as it would be created,
        so the writer only has to use them for the records that turn out new. Pure: no
        database."""
        key = self.writer.key
        if not self.prepare_rows or self.dry_run:
            for item in batch:
                item.key = key(item.values())
            return batch
        verdicts = admit_batch(item.values()["message_pattern"] for item in batch)
        to_params = self.writer.records.row
        for item in batch:
            row = self.new_row(item.values())
            set_verdict(row, verdicts[row["message_pattern"]])
            item.new_row, item.params = row, to_params(row)
            item.key = key(None, item.params)
        return batch

    def pack(self, batch: list[Incoming]) -> list[Incoming]:
        """In the parser process (``kb.importer.ahead``), before a batch crosses the pipe.
        Pickling and unpickling dicts is most of what a batch costs on its way, so a
        record goes as its line (one ``bytes``, cheap to copy) with its row's parameters
        where prepared, else its key: the writer decodes the line again only if the
        record turns out stored with other content (``Incoming.values``), and ``unpack``
        rebuilds the rest from the parameters."""
        for item in batch:
            item.attrs = item.new_row = None
            if item.params is not None:
                item.key = None
        return batch

    def unpack(self, batch: list[Incoming]) -> list[Incoming]:
        """In the writing process: undo ``pack``. On SQLite the writer reads only these
        keys of a created row (the rest is in its parameters); elsewhere it gets the whole
        row."""
        key, whole = self.writer.key, self.writer.copies is None
        at_reason, at_engine = self.verdict_params
        for item in batch:
            params = item.params
            if params is None:
                continue
            item.key = key(None, params)
            verdict = {"disabled_reason": params[at_reason], "pattern_engine": params[at_engine]}
            if whole:
                item.new_row = {**self.new_row(item.values()), **verdict}
            else:
                item.new_row = {"id": item.id, **verdict, **self.unstamped}
        return batch

    def new_row(self, attrs: dict[str, Any]) -> dict[str, Any]:
        row = {**self.defaults, **attrs, "status": Status.PUBLISHED}
        row["curated_fields"], row["conflicts"] = [], {}
        row.update(self.unstamped)  # set by ``apply`` once the batch is written
        return row

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
