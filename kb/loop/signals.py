"""A gap closes itself when a published record matches its samples.

Why a signal: records are published from several places (the admin's form and bulk
actions, `kb.services.set_status`), all of them saving the record; one receiver here
covers them all without each caller knowing about gaps. The closing runs once per
transaction, after it commits (the matcher must see the published record), and never fails
the curator's save: an error is logged and the next publish tries again.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from kb.models import ErrorRecord, Status
from kb.schema import MATCH_ATTRS

log = logging.getLogger(__name__)


def close_gaps_after_commit() -> None:
    from kb.loop.models import Gap
    from kb.loop.services import close_matched_gaps
    from kb.matching import holder

    if not Gap.objects.filter(closed_at__isnull=True).exists():
        return
    holder.expire()  # match against what was just committed, not the last refresh
    try:
        close_matched_gaps()
    except Exception:
        log.exception("closing matched gaps failed; the next publish tries again")


def _scheduled(using: str | None) -> bool:
    connection = transaction.get_connection(using)
    return any(entry[1] is close_gaps_after_commit for entry in connection.run_on_commit)


@receiver(post_save, sender=ErrorRecord, dispatch_uid="kb.loop.close_gaps_on_publish")
def close_gaps_on_publish(sender: Any, instance: ErrorRecord, **kwargs: Any) -> None:
    if instance.status != Status.PUBLISHED or _scheduled(kwargs.get("using")):
        return
    fields = kwargs.get("update_fields")
    if fields is not None and not MATCH_ATTRS.intersection(fields):
        return  # a save of fields that cannot change what the matcher answers
    transaction.on_commit(close_gaps_after_commit, using=kwargs.get("using"))
