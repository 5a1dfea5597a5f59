"""Links to records and tags: the one place that turns an id or a tag name into a URL.

A record id or a tag name is data, and some cannot be carried by a URL (a tag with a
``/``): those get ``""``, and the templates render plain text instead of a link, rather
than a page failing on ``NoReverseMatch``.

Lists link to many records and tags per row, so plain arguments (the common case) are
slotted into a pattern reversed once per URL name and script prefix; anything else goes
through ``reverse()`` itself, which quotes it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from django.urls import NoReverseMatch, get_script_prefix, reverse

_PLAIN = re.compile(r"[\w~-]+", re.ASCII)  # path segments that need no quoting
_SLOT = "__arg__"


@lru_cache(maxsize=16)
def _pattern(name: str, prefix: str) -> str:
    return reverse(name, args=[_SLOT])


def _link(name: str, arg: str) -> str:
    """``reverse(name, args=[arg])``, or ``""`` if no URL can carry ``arg``."""
    if _PLAIN.fullmatch(arg):
        return _pattern(name, get_script_prefix()).replace(_SLOT, arg)
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
