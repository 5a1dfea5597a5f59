"""What the pages above read of sources: which source and revision a record was learned
from, and since which revision its site is gone."""

from __future__ import annotations

from kb.sources.models import LearnedSite

__all__ = ["learned_sites"]


def learned_sites(record_id: str) -> list[LearnedSite]:
    """The sites ``record_id`` was learned from (one per source that has it), with their
    source, newest learn first."""
    return list(
        LearnedSite.objects.filter(record_id=record_id)
        .select_related("source")
        .order_by("-source__last_learned_at", "source_id")
    )
