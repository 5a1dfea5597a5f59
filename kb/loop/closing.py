"""A gap closes itself when a published record matches its samples.

Every publisher sends ``kb.records.signals.published`` (the admin's form and bulk actions,
an accepted proposal, the importer once its records are committed); ``LoopConfig.ready``
connects ``records_published`` here to it. The closing runs after the publisher's
transaction commits (the matcher must see the published record), once per send however
many records it published (a bulk publish or an import is one send), and never fails the
publisher: an error is logged and the next publish tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from kb.loop.models import Gap
from kb.matching.holder import holder, match_text
from kb.records.models import ErrorRecord, Status

__all__ = ["close_matched_gaps", "records_published"]

log = logging.getLogger(__name__)


def records_published(*, using: str | None = None, **_signal: Any) -> None:
    """Receiver of ``kb.records.signals.published``: records were published or changed
    while published; close the gaps they now answer once the current transaction commits
    (at once outside of one)."""
    transaction.on_commit(_close_after_commit, using=using)


def _close_after_commit() -> None:
    if not Gap.objects.filter(closed_at__isnull=True).exists():
        return
    holder.expire()  # match against what was just committed, not the last refresh
    try:
        close_matched_gaps()
    except Exception:
        log.exception("closing matched gaps failed; the next publish tries again")


def close_matched_gaps(*, limit: int = 500) -> int:
    """Close each open gap (most reported first, at most ``limit``) whose sample a
    published record confidently matches; returns how many closed."""
    closed = 0
    now = timezone.now()
    for gap in Gap.objects.filter(closed_at__isnull=True).order_by("-count", "pk")[:limit]:
        record = _published_match(match_text, gap.samples)
        if record is not None:
            updated = Gap.objects.filter(pk=gap.pk, closed_at__isnull=True).update(
                closed_by=record, closed_at=now
            )
            closed += updated
    return closed


def _published_match(
    match_text: Callable[[str], Any], samples: Iterable[str]
) -> ErrorRecord | None:
    for sample in samples:
        for m in match_text(sample).matches:
            if m.record.status == Status.PUBLISHED:
                return m.record
    return None
