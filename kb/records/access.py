"""Who may read unpublished records and do curators' work: the one rule, for every app.

A curator is an active staff user allowed to change records (``kb.change_errorrecord``:
the "Curators" group the migration made has it, superusers have every permission). Being
staff alone is not enough: staff are also the people given other parts of the admin (the
tasks, the users), and a draft is curators' work in progress. The record page, its JSON
twin, votes and proposals open a record through ``ErrorRecord.objects.visible_to``, the
work queue and ``GET /api/gaps`` check ``is_curator``; both are this function, so a page
never shows what its form then refuses, or the other way round.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CURATOR_PERMISSION", "is_curator"]

CURATOR_PERMISSION = "kb.change_errorrecord"


def is_curator(user: Any) -> bool:
    """Whether ``user`` (``None`` or anonymous: the public) may curate, and so read drafts."""
    return bool(
        getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
        and user.has_perm(CURATOR_PERMISSION)
    )
