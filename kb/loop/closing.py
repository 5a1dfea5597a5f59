"""A gap closes itself when a published record matches its samples: the call every place
that publishes a record makes.

Why an explicit call rather than a signal on the record's save: the importer writes
records in bulk (no ``save``, so no signal), and an import is how most records get
published; a call in each publisher also says there, where it can be read, what follows
from publishing. The callers: `kb.services.save_curator_edit` and `kb.services.set_status`
(the admin's form and bulk actions, an accepted proposal) and `kb.importer.import_jsonl`
once its records are committed.

The closing runs after the publisher's transaction commits (the matcher must see the
published record), once per call however many records the call published (a bulk
publish or an import is one call), and never fails the publisher: an error is logged and
the next publish tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from kb.loop.models import Gap
from kb.models import ErrorRecord, Status

__all__ = ["close_matched_gaps", "records_published"]

log = logging.getLogger(__name__)


def records_published(*, using: str | None = None) -> None:
    """Records were published or changed while published: close the gaps they now
    answer once the current transaction commits (at once outside of one)."""
    transaction.on_commit(_close_after_commit, using=using)


def _close_after_commit() -> None:
    from kb.matching import holder

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
    from kb.matching import match_text

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
