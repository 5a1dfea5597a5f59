"""What the learning loop keeps, and for how long: the retention purge, and the JSONL
export of gaps and proposals for offline review (both behind management commands).

Why apart from `kb.loop.services`: these run in bulk from a command, never from a request,
and touch every table at once; the request-time writes stay together there.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import IO, Any

from django.db import transaction
from django.utils import timezone

from kb.loop.models import Gap, GapWord, Proposal, UsageDay, Vote, VoterSalt
from kb.loop.votes import recount

__all__ = ["export_jsonl", "gap_json", "purge"]


def purge(*, older_than: datetime) -> dict[str, int]:
    """Delete what the retention no longer keeps: usage rows and votes of days before
    ``older_than`` (the tallies of their records counted again), gaps last reported
    before it (with their samples), proposals rejected before it, and the voter salts of
    days gone. Pending and accepted proposals stay (the record has the text)."""
    day = older_than.date()
    with transaction.atomic():
        usage, _ = UsageDay.objects.filter(day__lt=day).delete()
        old_votes = Vote.objects.filter(day__lt=day)
        voted = set(old_votes.filter(step__isnull=True).values_list("record_id", flat=True))
        votes, _ = old_votes.delete()
        recount(voted)  # the tallies count the votes that are kept, no more
        VoterSalt.objects.filter(day__lt=timezone.localdate()).delete()
        GapWord.objects.filter(gap__last_seen__lt=older_than).delete()
        gaps, _ = Gap.objects.filter(last_seen__lt=older_than).delete()
        rejected = Proposal.objects.filter(
            status=Proposal.State.REJECTED, decided_at__lt=older_than
        )
        proposals, _ = rejected.delete()
    return {"usage": usage, "votes": votes, "gaps": gaps, "proposals": proposals}


def export_jsonl(out: IO[str]) -> int:
    """Write every gap, then every proposal, one JSON object a line (``"kind"`` says
    which), for offline review; returns the number of lines."""
    n = 0
    for gap in Gap.objects.order_by("pk").iterator(chunk_size=2000):
        out.write(json.dumps(gap_json(gap) | {"kind": "gap"}, ensure_ascii=False) + "\n")
        n += 1
    for p in Proposal.objects.order_by("pk").iterator(chunk_size=2000):
        row = {
            "kind": "proposal",
            "id": p.pk,
            "record_id": p.record_id,
            "field": p.field,
            "text": p.text,
            "author": p.author,
            "status": p.status,
            "created_at": p.created_at.isoformat(),
            "decided_at": p.decided_at.isoformat() if p.decided_at else None,
        }
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n


def gap_json(gap: Gap) -> dict[str, Any]:
    """A gap in the contract's shape (``GET /api/gaps`` and the export)."""
    return {
        "id": str(gap.pk),
        "template": gap.template,
        "count": gap.count,
        "first_seen": gap.first_seen.isoformat(),
        "last_seen": gap.last_seen.isoformat(),
        "samples": list(gap.samples),
        "nearest": list(gap.nearest),
        "closed_by": gap.closed_by_id,
    }
