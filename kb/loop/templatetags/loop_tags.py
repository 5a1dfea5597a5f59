"""The learning loop's part of the public pages, for templates whose views are not the loop's.

The paste and record pages offer the loop's forms (report, feedback, "How did you fix it?");
their views need not know about it: these tags ask ``kb.loop.views`` what is turned on and,
on a record page, the solution steps in their voted order.
"""

from __future__ import annotations

from typing import Any

from django import template

from kb.loop.gates import flags
from kb.loop.views import record_panel
from kb.loop.votes import issue_voter_id

register = template.Library()


@register.simple_tag
def loop_flags() -> dict[str, Any]:
    """``{% loop_flags as loop %}``: which of reports, feedback and proposals are on."""
    return flags()


@register.simple_tag
def record_loop(record: Any) -> dict[str, Any]:
    """``{% record_loop record as loop %}``: the flags and the record's ordered steps."""
    return record_panel(record)


@register.simple_tag(takes_context=True)
def voter_form_id(context: dict[str, Any]) -> str:
    """``{% voter_form_id %}`` in a vote form: the browser gets its server-signed voter id
    with this page when it has none (`kb.loop.votes.issue_voter_id`); renders nothing."""
    request = context.get("request")
    if request is not None:
        issue_voter_id(request)
    return ""
