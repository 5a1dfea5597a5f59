"""Writes that keep the derived state right: the tag index and the revision counter.

Every path that stores records (importer, admin, API) goes through these, so the matcher
sees each change (``revision``) and tag pages stay in step with the records' tag lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

from kb.models import ErrorRecord, RecordTag, Tag, next_revision
from kb.schema import BY_ATTR
from kb.validation import admit_pattern


def sync_tags(records: Sequence[ErrorRecord]) -> None:
    """Rebuild the ``RecordTag`` rows of ``records`` from their ``tags`` lists."""
    if not records:
        return
    names = {str(name) for r in records for name in r.tags}
    existing = dict(Tag.objects.filter(name__in=names).values_list("name", "id"))
    missing = [Tag(name=n) for n in sorted(names - existing.keys())]
    if missing:
        Tag.objects.bulk_create(missing, ignore_conflicts=True)
        existing = dict(Tag.objects.filter(name__in=names).values_list("name", "id"))
    RecordTag.objects.filter(record_id__in=[r.pk for r in records]).delete()
    rows = []
    for record in records:
        seen: set[str] = set()
        for position, name in enumerate(record.tags):
            if name in seen:
                continue
            seen.add(name)
            rows.append(RecordTag(record_id=record.pk, tag_id=existing[name], position=position))
    RecordTag.objects.bulk_create(rows, batch_size=2000)


def refresh_pattern_state(record: ErrorRecord) -> None:
    """Set ``disabled_reason``/``pattern_engine`` from what the matcher says of the pattern."""
    verdict = admit_pattern(record.message_pattern)
    record.disabled_reason = "" if verdict.ok else verdict.reason or "pattern refused"
    record.pattern_engine = verdict.engine if verdict.ok else ""


def save_curated(
    record: ErrorRecord, *, changed_attrs: Iterable[str], reason: str = ""
) -> ErrorRecord:
    """Save a curator's edit: mark the edited dataset fields as curated, bump the revision.

    A curated field is kept by later imports (and reported as a conflict when an import
    brings a different value), so a curator never loses work to a dataset refresh.
    """
    changed = set(changed_attrs)
    curated = list(record.curated_fields or [])
    conflicts = dict(record.conflicts or {})
    for attr in changed:
        field = BY_ATTR.get(attr)
        if field is None:
            continue
        if field.key not in curated:
            curated.append(field.key)
        # The curator has seen the newest import's value and decided: conflict settled.
        conflicts.pop(field.key, None)
    record.curated_fields = curated
    record.conflicts = conflicts
    if "message_pattern" in changed:
        refresh_pattern_state(record)
    with transaction.atomic():
        record.revision = next_revision()
        if reason:
            record._change_reason = reason  # read by django-simple-history
        record.save()
        if "tags" in changed or record._state.adding:
            sync_tags([record])
    return record


def set_status(records: Iterable[ErrorRecord], status: str, *, reason: str = "") -> int:
    """Publish, retire or draft several records at once (history kept per record)."""
    count = 0
    with transaction.atomic():
        revision = next_revision()
        for record in records:
            if record.status == status:
                continue
            record.status = status
            record.revision = revision
            if reason:
                record._change_reason = reason
            record.save(update_fields=["status", "revision", "updated_at"])
            count += 1
    return count


def delete_records(records: Iterable[Any]) -> int:
    """Delete records and bump the revision so every matcher drops them."""
    with transaction.atomic():
        ids = [r.pk for r in records]
        deleted, _ = ErrorRecord.objects.filter(pk__in=ids).delete()
        next_revision()
    return deleted
