"""Import JSONL records: streaming, batched, idempotent, and kind to curators.

``import_jsonl(lines, ...)`` reads the dataset's JSONL (one ``{"record": ..., "datasetVersion":
...}`` a line) from any iterable of ``bytes`` lines, so memory stays flat whatever the file
size. Each bad line is reported with its number, field and reason; every good line is
stored. The management command and the admin upload are thin shells around it.

Re-import policy (see docs/importing.md):
- a record whose content equals what is stored is not written (``unchanged``);
- a record with different content and a ``contentChangedAt`` not older than the stored one
  is updated, except fields a curator edited: those are kept and the incoming value is
  stored as a conflict for the curator to settle; an older one is skipped (``stale``);
- within one file the first line with an id wins; a later duplicate is rejected;
- each batch commits on its own (an interrupted import keeps whole batches and resumes
  by importing the file again), or, with ``atomic=True``, the whole file is one
  transaction that any rejected line rolls back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from kb.models import ErrorRecord, next_revision
from kb.schema import BY_ATTR, CONTENT_ATTRS, FIELDS, FieldError, parse_record, to_dataset_value
from kb.services import sync_tags
from kb.validation import admit_pattern

BATCH_SIZE = 1000
MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_REPORTED_ERRORS = 1000
UPDATE_ATTRS = [*CONTENT_ATTRS, "extra", "dataset_version", "disabled_reason", "pattern_engine"]


@dataclass(slots=True)
class LineError:
    line: int
    field: str
    message: str


@dataclass(slots=True)
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    disabled: int = 0
    stale: int = 0
    conflicts: int = 0
    errors: list[LineError] = field(default_factory=list)
    conflicted: list[dict[str, str]] = field(default_factory=list)
    errors_truncated: int = 0
    lines: int = 0
    dry_run: bool = False
    rolled_back: bool = False

    def reject(self, line: int, field_name: str, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(LineError(line, field_name, message))
        else:
            self.errors_truncated += 1

    def as_json(self) -> dict[str, Any]:
        """The contract's summary object (CONTRACT.md), plus extra keys."""
        data = asdict(self)
        return {
            "created": data.pop("created"),
            "updated": data.pop("updated"),
            "unchanged": data.pop("unchanged"),
            "rejected": data.pop("rejected"),
            "disabled": data.pop("disabled"),
            "errors": data.pop("errors"),
            **data,
        }


class AtomicImportFailed(Exception):
    """Raised inside the transaction of an all-or-nothing import to roll it back."""


@dataclass(slots=True)
class _Incoming:
    line: int
    attrs: dict[str, Any]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def decode_line(raw: bytes, number: int) -> Any:
    """Bytes of one line to a JSON value; ``FieldError`` with a reason otherwise."""
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FieldError("-", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys
        )
    except json.JSONDecodeError as exc:
        raise FieldError("-", f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # duplicate keys, NaN/Infinity, > 4300-digit integers
        raise FieldError("-", f"invalid JSON: {exc}") from None
    except RecursionError:
        raise FieldError("-", "invalid JSON: nested too deeply") from None


def read_lines(stream: Any, max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Lines of a binary stream; ``None`` for a line longer than ``max_bytes`` (skipped
    without ever holding it whole in memory)."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # drain the rest of the over-long line
                rest = stream.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _dataset_view(attrs: dict[str, Any]) -> dict[str, Any]:
    return {a: to_dataset_value(BY_ATTR[a], attrs[a]) for a in CONTENT_ATTRS}


def _stored_view(record: ErrorRecord) -> dict[str, Any]:
    return {a: to_dataset_value(BY_ATTR[a], getattr(record, a)) for a in CONTENT_ATTRS}


class _Importer:
    def __init__(self, *, dry_run: bool, source: str) -> None:
        self.report = ImportReport(dry_run=dry_run)
        self.dry_run = dry_run
        self.source = source
        self.seen: dict[str, int] = {}

    def parse(self, number: int, raw: bytes | None) -> _Incoming | None:
        report = self.report
        if raw is None:
            report.reject(number, "-", f"line is longer than {MAX_LINE_BYTES} bytes")
            return None
        if not raw.strip():
            report.reject(number, "-", "blank line")
            return None
        try:
            attrs, version = parse_record(decode_line(raw, number))
        except FieldError as exc:
            report.reject(number, exc.field, exc.message)
            return None
        first = self.seen.get(attrs["id"])
        if first is not None:
            report.reject(number, "id", f"duplicate id {attrs['id']!r} (first on line {first})")
            return None
        self.seen[attrs["id"]] = number
        attrs["dataset_version"] = version
        return _Incoming(number, attrs)

    def apply(self, batch: list[_Incoming]) -> None:
        report = self.report
        existing = ErrorRecord.objects.in_bulk([item.attrs["id"] for item in batch])
        to_create: list[ErrorRecord] = []
        to_update: list[ErrorRecord] = []
        for item in batch:
            attrs = item.attrs
            current = existing.get(attrs["id"])
            if current is None:
                record = ErrorRecord(**attrs)
                self._admit(record)
                to_create.append(record)
            elif self._merge(current, attrs, item.line):
                to_update.append(current)
        report.created += len(to_create)
        report.updated += len(to_update)
        report.disabled += sum(1 for r in (*to_create, *to_update) if r.disabled_reason)
        if self.dry_run or not (to_create or to_update):
            return
        reason = f"import:{self.source}"
        with transaction.atomic():
            revision = next_revision()
            for record in (*to_create, *to_update):
                record.revision = revision
            if to_create:
                bulk_create_with_history(
                    to_create, ErrorRecord, batch_size=500, default_change_reason=reason
                )
            if to_update:
                bulk_update_with_history(
                    to_update,
                    ErrorRecord,
                    [*UPDATE_ATTRS, "curated_fields", "conflicts", "revision", "updated_at"],
                    batch_size=500,
                    default_change_reason=reason,
                )
            sync_tags([*to_create, *to_update])

    def _admit(self, record: ErrorRecord) -> None:
        verdict = admit_pattern(record.message_pattern)
        record.disabled_reason = "" if verdict.ok else verdict.reason or "pattern refused"
        record.pattern_engine = verdict.engine if verdict.ok else ""

    def _merge(self, current: ErrorRecord, attrs: dict[str, Any], line: int) -> bool:
        """Fold incoming attrs into ``current``; True when it must be written."""
        report = self.report
        incoming = _dataset_view(attrs)
        stored = _stored_view(current)
        same_extra = (current.extra or {}) == attrs["extra"]
        if (
            incoming == stored
            and same_extra
            and current.dataset_version == attrs["dataset_version"]
        ):
            report.unchanged += 1
            return False
        new_time, old_time = attrs.get("content_changed_at"), current.content_changed_at
        if new_time and old_time and new_time < old_time:
            report.stale += 1
            report.unchanged += 1
            return False
        curated = set(current.curated_fields or [])
        conflicts = dict(current.conflicts or {})
        pattern_before = current.message_pattern
        for attr in (*CONTENT_ATTRS, "extra", "dataset_version"):
            key = BY_ATTR[attr].key if attr in BY_ATTR else attr
            if key in curated:
                value = incoming.get(attr)
                if value != stored.get(attr):
                    conflicts[key] = {
                        "incoming": value,
                        "contentChangedAt": incoming.get("content_changed_at"),
                        "source": self.source,
                        "line": line,
                    }
                    report.conflicts += 1
                    if len(report.conflicted) < MAX_REPORTED_ERRORS:
                        report.conflicted.append({"id": current.id, "field": key})
                else:
                    conflicts.pop(key, None)
                continue
            setattr(current, attr, attrs[attr])
        current.conflicts = conflicts
        if current.message_pattern != pattern_before or not current.pattern_engine:
            self._admit(current)
        return True


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
    that was too long to read). See the module docstring for the policy."""
    importer = _Importer(dry_run=dry_run, source=source)

    def run() -> None:
        batch: list[_Incoming] = []
        number = 0
        for number, raw in enumerate(lines, start=1):
            item = importer.parse(number, raw)
            if item is not None:
                batch.append(item)
            if len(batch) >= batch_size:
                importer.apply(batch)
                batch = []
                if progress:
                    progress(number)
        if batch:
            importer.apply(batch)
        importer.report.lines = number
        if progress:
            progress(number)

    if atomic:
        try:
            with transaction.atomic():
                run()
                if importer.report.rejected and not dry_run:
                    raise AtomicImportFailed
        except AtomicImportFailed:
            importer.report.rolled_back = True
    else:
        run()
    return importer.report


__all__ = ["FIELDS", "ImportReport", "LineError", "import_jsonl", "read_lines"]
