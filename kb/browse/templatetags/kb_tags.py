"""Small template filters for the record and paste pages; none of them marks text safe."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def percent(value: Any) -> str:  # whatever the template holds: float() tells
    """0.873 -> "87%" (empty for a missing value)."""
    try:
        return f"{round(float(value) * 100)}%"
    except (TypeError, ValueError):
        return ""


@register.filter
def as_list(value: object) -> list[str]:
    """A JSON list field as strings; a lone string becomes a one-item list."""
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v not in (None, "")]
    return [str(value)]


@register.filter
def url_of(urls: Mapping[str, str], record_id: str) -> str:
    """``{{ record_urls|url_of:record.pk }}``: the record's page, from the page's
    `kb.records.links.RecordUrls` (each record reversed once per page)."""
    return urls[str(record_id)]
