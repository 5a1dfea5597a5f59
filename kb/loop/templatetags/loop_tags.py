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

register = template.Library()


@register.simple_tag
def loop_flags() -> dict[str, Any]:
    """``{% loop_flags as loop %}``: which of reports, feedback and proposals are on."""
    return flags()


@register.simple_tag
def record_loop(record: Any) -> dict[str, Any]:
    """``{% record_loop record as loop %}``: the flags and the record's ordered steps."""
    return record_panel(record)
