"""The import loop: batches parsed by ``kb.records.importer.parsing`` are folded into what is stored
and written.

See the package docstring for the policy. A batch is read with one query (only the
columns' values, no model instances), compared in Python, its new and changed patterns
admitted with one call, and written by ``RowWriter`` inside a transaction of
``commit_records`` records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from kb.records.importer.admission import admit_batch, set_verdict
from kb.records.importer.parsing import Incoming, Parser
from kb.records.importer.report import MAX_REPORTED_ERRORS, ImportReport
from kb.records.importer.rows import RowWriter
from kb.records.models import ErrorRecord, Status, next_revision
from kb.records.schema import BY_ATTR, CONTENT_ATTRS, OPTIONAL_ATTRS, to_dataset_value
from kb.records.signals import records_published

BATCH_SIZE = 2000
# Records per commit. A commit writes every page the transaction changed to the WAL, and a
# batch of new records changes pages all over the id-keyed indexes (ids are hashes), so
# the same index pages are written again at every commit: fewer, larger commits write
# them fewer times, while an interrupted import still keeps whole commits.
COMMIT_RECORDS = 10_000
COMPARED_ATTRS = (*CONTENT_ATTRS, "extra", "dataset_version")


class AtomicImportFailed(Exception):
    """Raised inside the transaction of an all-or-nothing import to roll it back."""


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal as the dataset sees them (datetimes compared at the dataset's precision); an
    optional field ``a`` does not carry is not compared (``a`` keeps ``b``'s)."""
    for attr in COMPARED_ATTRS:
        if attr in OPTIONAL_ATTRS and attr not in a:
            continue
        x, y = a.get(attr), b.get(attr)
        if x != y and not (
            attr in BY_ATTR
            and to_dataset_value(BY_ATTR[attr], x) == to_dataset_value(BY_ATTR[attr], y)
        ):
            return False
    return True


class _Importer:
    """The writing half: folds each parsed batch into what is stored and writes it."""

    def __init__(self, *, dry_run: bool, source: str, new_status: str = Status.PUBLISHED) -> None:
        self.report = ImportReport(dry_run=dry_run)
        self.new_status = new_status
        self.dry_run = dry_run
        self.source = source
        self.writer = RowWriter(source, COMPARED_ATTRS)
        self.parser = Parser(self.report)
        # Immutable defaults only: JSON columns get fresh containers per row (``_new_row``).
        self.defaults = {
            f.attname: f.get_default()
            for f in ErrorRecord._meta.concrete_fields
            if (f.has_default() or f.null) and f.get_internal_type() != "JSONField"
        }

    def _new_row(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The row of a record not stored yet: the model's defaults under the parsed attrs."""
        row = {**self.defaults, **attrs, "status": self.new_status}
        row["curated_fields"], row["conflicts"] = [], {}
        if "retired_wordings" not in row:  # optional JSON fields an older file leaves out
            row["retired_wordings"] = []
        row.setdefault("release_history", None)
        return row

    def apply(self, batch: list[Incoming]) -> None:
        if not batch:
            return
        if self.dry_run:
            self._fold(batch)
            return
        try:
            # Inside the caller's transaction, as a part of it: a savepoint per batch would
            # make SQLite keep the old image of every page the batch changes, in memory
            # (``temp_store=MEMORY``), until the savepoint ends.
            with transaction.atomic(savepoint=False):
                created, updated, retag = self._fold(batch)
                if created or updated:
                    now = timezone.now()
                    revision = next_revision()
                    for row in (*created, *updated):
                        row["revision"] = revision
                        row["updated_at"] = now
                    for row in created:
                        row["created_at"] = now
                    self.writer.write(created, updated, retag, now)
        except DatabaseError:
            self.writer.forget_tags()
            raise

    def _fold(
        self, batch: list[Incoming]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Decide each record of the batch; returns the (created, updated, retag) rows."""
        report = self.report
        writer = self.writer
        stored = writer.stored([item.id for item in batch])
        # Records stored with other content (or no raw form to compare): fetched whole.
        differ = [
            item.id
            for item in batch
            if item.id in stored
            and (stored[item.id] is None or stored[item.id] != writer.key(item.attrs))
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
        to_admit: list[tuple[int, dict[str, Any]]] = []
        for item in batch:
            current = existing.get(item.id)
            if current is None and item.id in stored:  # stored exactly as it comes
                report.unchanged += 1
                continue
            if current is None:
                row = self._new_row(item.attrs)
                to_admit.append((item.line, row))
                created.append(row)
                continue
            attrs = item.attrs
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
            set_verdict(row, verdicts[row["message_pattern"]])
            if row["disabled_reason"]:
                report.note_disabled(line, row["id"], row["disabled_reason"])
        report.created += len(created)
        report.updated += len(updated)
        return created, updated, retag

    def _merge(self, current: dict[str, Any], attrs: dict[str, Any], line: int) -> None:
        """Fold incoming attrs into ``current``, keeping curated fields as conflicts."""
        report = self.report
        curated = set(current["curated_fields"] or [])
        conflicts = dict(current["conflicts"] or {})
        for attr in COMPARED_ATTRS:
            if attr in OPTIONAL_ATTRS and attr not in attrs:
                continue  # an older file: what is stored stands
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
    commit_records: int = COMMIT_RECORDS,
    new_status: str = Status.PUBLISHED,
) -> ImportReport:
    """Import JSONL ``lines`` (bytes, as read from a binary file; ``None`` marks a line
    that was too long to read). See the package docstring for the policy. Records not
    stored yet are created with ``new_status`` (a source that wants its new records
    reviewed first creates them as drafts); a stored record keeps its status."""
    importer = _Importer(dry_run=dry_run, source=source, new_status=new_status)
    started = time.perf_counter()

    def run() -> None:
        batches = importer.parser.batches(lines, batch_size, commit_records)
        more = True
        while more:
            # One transaction per ``commit_records`` records (``COMMIT_RECORDS``); with
            # ``atomic``, a part of the import's one transaction (no savepoint).
            written = 0
            with nullcontext() if dry_run else transaction.atomic(savepoint=False):
                for batch, number in batches:
                    importer.apply(batch)
                    importer.report.lines = number
                    if progress:
                        progress(number)
                    written += len(batch)
                    if written >= commit_records:
                        break
                else:
                    more = False

    _run(importer, run, atomic=atomic, dry_run=dry_run)
    report = importer.report
    if not dry_run and not report.rolled_back and (report.created or report.updated):
        records_published()  # committed: the gaps the imported records answer close
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
