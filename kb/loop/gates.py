"""Whether a part of the learning loop takes this request: the one gate of its pages and API.

A part turned off by its setting answers 403; otherwise the request counts against the same
rate limit as matching (a report runs the redaction and the folding, and a flood of votes or
proposals is the same abuse as a flood of pastes). Pages and API word refusals alike.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from kb.http import Refusal, refusal_response
from kb.ops.middleware import rate_limit_response

# What each setting turns off, in the words of the 403 it answers.
FEATURES = {
    "KB_REPORTS_ENABLED": "Reporting unknown errors",
    "KB_FEEDBACK_ENABLED": "Feedback on answers",
    "KB_PROPOSALS_ENABLED": "Proposing fixes",
}
# The parts charged their handling's CPU time as well as their body's size (redaction,
# folding, a stored row: kb.ops.middleware.CostCharge).
CHARGED_BY_COST = frozenset(("KB_REPORTS_ENABLED", "KB_PROPOSALS_ENABLED"))


def flags() -> dict[str, bool | int]:
    """Which parts of the loop are on, for the templates that offer them."""
    return {
        "reports": settings.KB_REPORTS_ENABLED,
        "feedback": settings.KB_FEEDBACK_ENABLED,
        "proposals": settings.KB_PROPOSALS_ENABLED,
        "proposal_max_chars": settings.KB_PROPOSAL_MAX_CHARS,
    }


def turned_off(setting: str) -> Refusal:
    return Refusal(
        status=403,
        title=f"{FEATURES[setting]} is turned off",
        detail="This site does not take it at the moment.",
    )


def gate(request: HttpRequest, setting: str) -> HttpResponse | None:
    """The refusal for this request, or ``None`` when it may go on."""
    if not getattr(settings, setting):
        return refusal_response(request, turned_off(setting))
    return rate_limit_response(request, by_cost=setting in CHARGED_BY_COST)
