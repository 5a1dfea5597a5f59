"""The import loop: parse lines, fold each batch into what is stored, write it.

See the package docstring for the policy. A batch is read with one query (only the
columns' values, no model instances), compared in Python, admitted with one call for all
its new patterns, and written in one transaction by ``RowWriter``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from kb.importer.admission import admit_batch
from kb.importer.lines import MAX_LINE_BYTES, decode_line, fast_decode
from kb.importer.report import MAX_REPORTED_ERRORS, ImportReport
from kb.importer.rows import RowWriter
from kb.importer.seen import SeenIds
from kb.importer.walcheckpoint import batch_commits
from kb.models import ErrorRecord, Status, next_revision
from kb.schema import (
    BY_ATTR,
    CONTENT_ATTRS,
    FieldError,
    parse_plain_record,
    parse_record,
    to_dataset_value,
)
from kb.validation import PatternVerdict

BATCH_SIZE = 2000
COMPARED_ATTRS = (*CONTENT_ATTRS, "extra", "dataset_version")


def _nothing() -> None:
    return None


class AtomicImportFailed(Exception):
    """Raised inside the transaction of an all-or-nothing import to roll it back."""


@dataclass(slots=True)
class _Incoming:
    line: int
    attrs: dict[str, Any]
    # Worked out when the batch is parsed (see ``_Importer.prepare``): the row this record
    # would be created as, and its parameters.
    new_row: dict[str, Any] | None = None
    params: list[Any] | None = None
    # The compared columns as bound parameters (``RowWriter.key``): equal to the stored
    # ones means unchanged, without fetching and converting the stored record.
    key: Any = None


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal as the dataset sees them (datetimes compared at the dataset's precision)."""
    for attr in COMPARED_ATTRS:
        x, y = a.get(attr), b.get(attr)
        if x != y and not (
            attr in BY_ATTR
            and to_dataset_value(BY_ATTR[attr], x) == to_dataset_value(BY_ATTR[attr], y)
        ):
            return False
    return True


def _set_verdict(row: dict[str, Any], verdict: PatternVerdict) -> None:
    row["disabled_reason"] = "" if verdict.ok else verdict.reason or "pattern refused"
    row["pattern_engine"] = verdict.engine if verdict.ok else ""


class _Importer:
    def __init__(self, *, dry_run: bool, source: str) -> None:
        self.report = ImportReport(dry_run=dry_run)
        self.dry_run = dry_run
        self.source = source
        self.pending: dict[str, int] = {}  # ids of the batch being read -> line
        # Prepare new rows while parsing? Off while batches are mostly stored records (a
        # re-import), where the work would be thrown away; the writer updates it.
        self.prepare_rows = True
        self.writer = RowWriter(source, COMPARED_ATTRS)
        self.unstamped = dict.fromkeys(self.writer.stamped)
        # Immutable defaults only: JSON columns get fresh containers per row (``_fold``).
        self.defaults = {
            f.attname: f.get_default()
            for f in ErrorRecord._meta.concrete_fields
            if (f.has_default() or f.null) and f.get_internal_type() != "JSONField"
        }

    def parse(self, number: int, raw: bytes | None) -> _Incoming | None:
        report = self.report
        if raw is None:
            report.reject(number, "-", f"line is longer than {MAX_LINE_BYTES} bytes")
            return None
        if not raw.strip():
            report.reject(number, "-", "blank line")
            return None
        try:
            # A NUL or lone surrogate can only enter a string through a ``\u`` escape
            # (strict UTF-8 refuses encoded surrogates, strict JSON raw control characters).
            escapes = b"\\u" in raw
            plain = None if escapes else fast_decode(raw)
            if plain is not None:  # see kb.importer.lines: only through parse_plain_record
                plain = parse_plain_record(plain)
            attrs, version = plain or parse_record(decode_line(raw, number), text_safe=not escapes)
        except FieldError as exc:
            report.reject(number, exc.field, exc.message)
            return None
        record_id = attrs["id"]
        first = self.pending.get(record_id)
        if first is not None:
            report.reject(number, "id", f"duplicate id {record_id!r} (first on line {first})")
            return None
        self.pending[record_id] = number
        attrs["dataset_version"] = version
        return _Incoming(number, attrs)

    def batches(
        self, lines: Iterable[bytes | None], batch_size: int
    ) -> Iterator[tuple[list[_Incoming], int]]:
        """Parsed batches of good lines, each with the number of the last line read (the
        last one possibly empty, carrying the line count). Touches only the report's
        rejections, never the database."""
        seen = SeenIds()  # ids of earlier batches, on disk
        try:
            batch: list[_Incoming] = []
            number = 0
            for number, raw in enumerate(lines, start=1):
                item = self.parse(number, raw)
                if item is not None:
                    batch.append(item)
                if len(batch) >= batch_size:
                    yield self.prepare(self.drop_earlier_duplicates(batch, seen)), number
                    batch = []
            if batch:
                batch = self.prepare(self.drop_earlier_duplicates(batch, seen))
            yield batch, number
        finally:
            seen.close()

    def prepare(self, batch: list[_Incoming]) -> list[_Incoming]:
        """Admit the batch's patterns and build each record's row as it would be created,
        so the writer only has to use them for the records that turn out new. Pure: no
        database."""
        key = self.writer.key
        if not self.prepare_rows or self.dry_run:
            for item in batch:
                item.key = key(item.attrs)
            return batch
        verdicts = admit_batch(item.attrs["message_pattern"] for item in batch)
        to_params = self.writer.records.row
        for item in batch:
            row = self.new_row(item.attrs)
            _set_verdict(row, verdicts[row["message_pattern"]])
            item.new_row, item.params = row, to_params(row)
            item.key = key(None, item.params)
        return batch

    def new_row(self, attrs: dict[str, Any]) -> dict[str, Any]:
        row = {**self.defaults, **attrs, "status": Status.PUBLISHED}
        row["curated_fields"], row["conflicts"] = [], {}
        row.update(self.unstamped)  # set by ``apply`` once the batch is written
        return row

    def drop_earlier_duplicates(self, batch: list[_Incoming], seen: SeenIds) -> list[_Incoming]:
        """Reject lines whose id an earlier batch had; remember this batch's ids."""
        pending, self.pending = self.pending, {}
        earlier = seen.first_lines(list(pending))
        seen.add((i, n) for i, n in pending.items() if i not in earlier)
        if not earlier:
            return batch
        kept = []
        for item in batch:
            first = earlier.get(item.attrs["id"])
            if first is None:
                kept.append(item)
            else:
                self.report.reject(
                    item.line, "id", f"duplicate id {item.attrs['id']!r} (first on line {first})"
                )
        return kept

    def apply(self, batch: list[_Incoming]) -> None:
        if not batch:
            return
        if self.dry_run:
            self._fold(batch)
            return
        try:
            with transaction.atomic():
                created, updated, retag, created_params = self._fold(batch)
                if created or updated:
                    now = timezone.now()
                    revision = next_revision()
                    for row in (*created, *updated):
                        row["revision"] = revision
                        row["updated_at"] = now
                    for row in created:
                        row["created_at"] = now
                    self.writer.write(created, updated, retag, now, created_params)
        except DatabaseError:
            self.writer.forget_tags()
            raise

    def _fold(
        self, batch: list[_Incoming]
    ) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[list[Any] | None]
    ]:
        """Decide each record of the batch; returns (created, updated, retag) rows and the
        prepared parameters of each created row (``None`` where not prepared)."""
        report = self.report
        stored = self.writer.stored([item.attrs["id"] for item in batch])
        # Records stored with other content (or no raw form to compare): fetched whole.
        differ = [
            item.attrs["id"]
            for item in batch
            if item.attrs["id"] in stored
            and (stored[item.attrs["id"]] is None or stored[item.attrs["id"]] != item.key)
        ]
        existing = (
            {
                row["id"]: row
                for row in ErrorRecord.objects.filter(pk__in=differ).values(
                    *self.writer.record_fields
                )
            }
            if differ
            else {}
        )
        created: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        retag: list[dict[str, Any]] = []
        created_params: list[list[Any] | None] = []
        to_admit: list[tuple[int, dict[str, Any]]] = []
        for item in batch:
            attrs = item.attrs
            current = existing.get(attrs["id"])
            if current is None and attrs["id"] in stored:  # stored exactly as it comes
                report.unchanged += 1
                continue
            if current is None:
                row = item.new_row
                if row is None:
                    row = self.new_row(attrs)
                    to_admit.append((item.line, row))
                elif row["disabled_reason"]:
                    report.note_disabled(item.line, row["id"], row["disabled_reason"])
                created.append(row)
                created_params.append(item.params)
                continue
            if _same(attrs, current):
                report.unchanged += 1
                continue
            new_time, old_time = attrs.get("content_changed_at"), current["content_changed_at"]
            if new_time and old_time and new_time < old_time:
                report.stale += 1
                report.unchanged += 1
                continue
            tags_before, pattern_before = current["tags"], current["message_pattern"]
            self._merge(current, attrs, item.line)
            updated.append(current)
            if current["tags"] != tags_before:
                retag.append(current)
            if current["message_pattern"] != pattern_before or not current["pattern_engine"]:
                to_admit.append((item.line, current))
            elif current["disabled_reason"]:
                report.note_disabled(item.line, current["id"], current["disabled_reason"])
        verdicts = admit_batch(row["message_pattern"] for _line, row in to_admit)
        for line, row in to_admit:
            _set_verdict(row, verdicts[row["message_pattern"]])
            if row["disabled_reason"]:
                report.note_disabled(line, row["id"], row["disabled_reason"])
        report.created += len(created)
        report.updated += len(updated)
        # Most of this batch already stored: a re-import; stop preparing rows ahead.
        self.prepare_rows = 2 * len(created) >= len(batch)
        return created, updated, retag, created_params

    def _merge(self, current: dict[str, Any], attrs: dict[str, Any], line: int) -> None:
        """Fold incoming attrs into ``current``, keeping curated fields as conflicts."""
        report = self.report
        curated = set(current["curated_fields"] or [])
        conflicts = dict(current["conflicts"] or {})
        for attr in COMPARED_ATTRS:
            field = BY_ATTR.get(attr)
            key = field.key if field else attr
            if key not in curated:
                current[attr] = attrs[attr] if attr in attrs else current[attr]
                continue
            incoming = to_dataset_value(field, attrs.get(attr)) if field else attrs.get(attr)
            stored = to_dataset_value(field, current[attr]) if field else current[attr]
            if incoming == stored:
                conflicts.pop(key, None)
                continue
            conflicts[key] = {
                "incoming": incoming,
                "contentChangedAt": to_dataset_value(
                    BY_ATTR["content_changed_at"], attrs.get("content_changed_at")
                ),
                "source": self.source,
                "line": line,
            }
            report.conflicts += 1
            if len(report.conflicted) < MAX_REPORTED_ERRORS:
                report.conflicted.append({"id": current["id"], "field": key})
        current["conflicts"] = conflicts


def import_jsonl(
    lines: Iterable[bytes | None],
    *,
    dry_run: bool = False,
    atomic: bool = False,
    source: str = "-",
    progress: Callable[[int], None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import JSONL ``lines`` (bytes, as read from a binary file; ``None`` marks a line
    that was too long to read). See the package docstring for the policy."""
    importer = _Importer(dry_run=dry_run, source=source)
    started = time.perf_counter()

    def run() -> None:
        with batch_commits(connection) if not dry_run else nullcontext(_nothing) as committed:
            for batch, number in importer.batches(lines, batch_size):
                importer.apply(batch)
                committed()
                importer.report.lines = number
                if progress:
                    progress(number)

    _run(importer, run, atomic=atomic, dry_run=dry_run)
    importer.report.errors.sort(key=lambda e: e.line)
    importer.report.seconds = round(time.perf_counter() - started, 3)
    return importer.report


def _run(importer: _Importer, run: Callable[[], None], *, atomic: bool, dry_run: bool) -> None:
    if atomic:
        try:
            with transaction.atomic():
                run()
                if importer.report.rejected and not dry_run:
                    raise AtomicImportFailed
        except AtomicImportFailed:
            importer.report.rolled_back = True
            importer.writer.forget_tags()
    else:
        run()
