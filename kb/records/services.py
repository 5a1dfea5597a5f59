"""Curator writes, in one place: what an edit, a revert or a settled conflict does to a
record, and the derived state each write keeps right (the tag index, the revision
counter, the pattern's verdict).

The admin (and any other curator-facing path) hands in facts: the record as the curator
left it, which fields the form saw change, who, why, whether it is a revert and which
import conflicts were settled which way. The rules live here, so they are tested without
the admin:

- an edited dataset field becomes *curated*: later imports keep it and report a
  conflict instead of overwriting it;
- a curator never writes provenance or the curation bookkeeping: every save keeps them as
  stored, which is what makes a revert safe (it brings back an old version's curated
  values and status, never its provenance, curated list or conflicts);
- a conflict is settled by taking the import's value (the field goes back to the
  dataset) or by keeping the curator's (the field stays curated);
- every write bumps the revision, so each worker's matcher picks the change up, and is
  one history row with the curator's name and reason.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from simple_history.utils import bulk_update_with_history

from kb.records.models import ErrorRecord, RecordTag, Status, Tag, next_revision
from kb.records.schema import BY_ATTR, BY_KEY, FIELDS, MATCH_ATTRS, incoming_value
from kb.records.signals import records_published
from kb.records.validation import admit_pattern, record_warnings

# What a curator may change: the curatable dataset fields, and the status.
EDITABLE_ATTRS = frozenset({*(f.attr for f in FIELDS if f.curatable), "status"})
# What a curator's save keeps as stored, whatever the instance holds: the newest import's
# provenance, and the curation bookkeeping, which only the rules below change.
KEPT_AS_STORED = (
    *(f.attr for f in FIELDS if not f.curatable and f.attr != "id"),
    "extra", "dataset_version", "created_at", "curated_fields", "conflicts",
)  # fmt: skip
# The matcher's verdict on the pattern, kept while the pattern is the stored one.
VERDICT_ATTRS = ("disabled_reason", "pattern_engine")


@dataclass(frozen=True, slots=True)
class CuratorEdit:
    """A saved curator edit: the record, the attributes that changed, and what is allowed
    but worth telling the curator (generic pattern, accepted collisions)."""

    record: ErrorRecord
    changed: list[str]
    warnings: list[str]


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


def _mark_curated(record: ErrorRecord, attrs: Iterable[str]) -> None:
    """Each edited dataset field becomes curated, and its conflict is settled: the curator
    has seen the newest import's value and decided."""
    curated = list(record.curated_fields or [])
    conflicts = dict(record.conflicts or {})
    for attr in attrs:
        field = BY_ATTR.get(attr)
        if field is None or not field.curatable:
            continue
        if field.key not in curated:
            curated.append(field.key)
        conflicts.pop(field.key, None)
    record.curated_fields = curated
    record.conflicts = conflicts


def _sign(record: ErrorRecord, *, reason: str, user: Any) -> None:
    """Who and why, for the history row django-simple-history writes on the next save
    (without a user it falls back to the request's, through its middleware)."""
    if reason:
        record._change_reason = reason
    if user is not None:
        record._history_user = user


def save_curated(
    record: ErrorRecord, *, changed_attrs: Iterable[str], reason: str = "", user: Any = None
) -> ErrorRecord:
    """Save ``record`` with ``changed_attrs`` curated, bumping the revision (one history
    row, by ``user`` when given)."""
    changed = set(changed_attrs)
    _mark_curated(record, changed)
    if "message_pattern" in changed:
        refresh_pattern_state(record)
    with transaction.atomic():
        record.revision = next_revision()
        _sign(record, reason=reason, user=user)
        record.save()
        if "tags" in changed or record._state.adding:
            sync_tags([record])
    return record


def _differs(a: Any, b: Any) -> bool:
    return (None if a == "" else a) != (None if b == "" else b)


def _keep_and_diff(
    record: ErrorRecord, stored: ErrorRecord | None, changed_fields: Iterable[str]
) -> set[str]:
    """Put back on ``record`` what a curator does not own, and return the editable
    attributes that changed: those the caller saw change and those that differ from the
    stored row (a revert submits an old version's values, which its form sees as
    unchanged)."""
    changed = {a for a in changed_fields if a in EDITABLE_ATTRS}
    if stored is None:
        return changed
    # An old version's instance (simple_history's ``.instance``) is built as if new.
    record._state.adding = False
    changed |= {a for a in EDITABLE_ATTRS if _differs(getattr(record, a), getattr(stored, a))}
    kept = KEPT_AS_STORED
    if record.message_pattern == stored.message_pattern:
        kept = (*kept, *VERDICT_ATTRS)
    for attr in kept:
        setattr(record, attr, getattr(stored, attr))
    return changed


def _settle_conflicts(
    record: ErrorRecord, *, take_incoming: Collection[str], keep_mine: Collection[str]
) -> list[str]:
    """Settle the conflicts named by dataset key; returns the attributes whose import
    value was taken (they go back to the dataset: not curated any more)."""
    taken = []
    for key in take_incoming:
        if key not in record.conflicts:
            continue  # settled meanwhile (an import after the form was opened): nothing to take
        attr = BY_KEY[key].attr
        setattr(record, attr, incoming_value(record, key))
        record.curated_fields = [k for k in record.curated_fields if k != key]
        record.conflicts.pop(key, None)
        taken.append(attr)
    for key in keep_mine:
        record.conflicts.pop(key, None)
    return taken


def save_curator_edit(
    *,
    record: ErrorRecord,
    changed_fields: Iterable[str],
    user: Any,
    reason: str = "",
    is_revert: bool = False,
    take_incoming: Collection[str] = (),
    keep_mine: Collection[str] = (),
    via: str = "admin",
) -> CuratorEdit:
    """Save a curator's edit of ``record``, an instance holding the submitted values (for
    a revert: the old version's instance).

    ``changed_fields`` are what the caller saw change (a form's ``changed_data``);
    ``take_incoming`` and ``keep_mine`` are the dataset keys of the conflicts the curator
    settled. ``reason`` defaults to ``"<via>: edit"`` or ``"<via>: revert"``. The stored
    row is read in the write's transaction, so what a save keeps is what is stored when
    it writes (an import's provenance landing after the form loaded included).
    """
    reason = reason or f"{via}: {'revert' if is_revert else 'edit'}"
    with transaction.atomic():
        stored = ErrorRecord.objects.filter(pk=record.pk).first()
        changed = _keep_and_diff(record, stored, changed_fields)
        taken = _settle_conflicts(record, take_incoming=take_incoming, keep_mine=keep_mine)
        changed.difference_update(taken)
        if "message_pattern" in taken:
            refresh_pattern_state(record)
        save_curated(record, changed_attrs=changed, reason=reason, user=user)
        if "tags" in taken:
            sync_tags([record])
        if record.status == Status.PUBLISHED and MATCH_ATTRS.intersection({*changed, *taken}):
            records_published()  # the gaps this record now answers close
    accepted = record.collisions if record.accept_collisions else ()
    warnings = record_warnings(record.message_pattern, accepted_collisions=accepted)
    return CuratorEdit(record=record, changed=sorted(changed), warnings=warnings)


def add_tags(records: Iterable[ErrorRecord], tags: list[str], *, user: Any, reason: str) -> int:
    """Append ``tags`` to each record's tag list (a curated edit of ``tags``, one history
    row a changed record); returns the number of records changed."""
    changed: list[ErrorRecord] = []
    now = timezone.now()
    for record in records:
        new = [t for t in tags if t not in record.tags]
        if not new:
            continue
        record.tags = [*record.tags, *new]
        _mark_curated(record, ["tags"])
        record.updated_at = now
        changed.append(record)
    if not changed:
        return 0
    with transaction.atomic():
        revision = next_revision()
        for record in changed:
            record.revision = revision
        bulk_update_with_history(
            changed,
            ErrorRecord,
            ["tags", "curated_fields", "conflicts", "revision", "updated_at"],
            batch_size=500,
            default_user=user,
            default_change_reason=reason,
        )
        sync_tags(changed)
    return len(changed)


def set_status(
    records: Iterable[ErrorRecord], status: str, *, reason: str = "", user: Any = None
) -> int:
    """Publish, retire or draft several records at once (a history row a changed record,
    by ``user`` when given)."""
    count = 0
    with transaction.atomic():
        revision = next_revision()
        for record in records:
            if record.status == status:
                continue
            record.status = status
            record.revision = revision
            _sign(record, reason=reason, user=user)
            record.save(update_fields=["status", "revision", "updated_at"])
            count += 1
        if count and status == Status.PUBLISHED:
            records_published()  # the gaps these records now answer close
    return count


def delete_records(records: Iterable[Any]) -> int:
    """Delete records; the database's delete trigger bumps the revision, so every matcher
    drops them (docs/reliability.md#r38-deletes-bump-revision)."""
    ids = [r.pk for r in records]
    deleted, _ = ErrorRecord.objects.filter(pk__in=ids).delete()
    return deleted
