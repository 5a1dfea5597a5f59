"""Links to records and tags: the one place that turns an id or a tag name into a URL.

A record id or a tag name is data, and some cannot be carried by a URL (a tag with a
``/``): those get ``""``, and the templates render plain text instead of a link, rather
than a page failing on ``NoReverseMatch``.

Plain ``reverse()`` per link: a cache of reversed patterns saved too little of any page's
time to be worth its code (``benchmarks/bench_pages.py --layers``).
"""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse


def _link(name: str, arg: str) -> str:
    """``reverse(name, args=[arg])``, or ``""`` if no URL can carry ``arg``."""
    try:
        return reverse(name, args=[arg])
    except NoReverseMatch:
        return ""


def record_url(record_id: str) -> str:
    """The record's page (``/records/<id>/``)."""
    return _link("record_detail", str(record_id))


def tag_url(name: str) -> str:
    """The tag's page (``/tags/<name>/``)."""
    return _link("tag_detail", str(name))


def tag_links(tags: list[str] | None) -> list[tuple[str, str]]:
    """``(name, url)`` for each tag of a record's list, in its order."""
    return [(str(tag), tag_url(str(tag))) for tag in (tags or [])]
