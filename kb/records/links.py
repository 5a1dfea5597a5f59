"""Links to records and tags: the one place that turns an id or a tag name into a URL.

A record id or a tag name is data, and some cannot be carried by a URL (a tag with a
``/``): those get ``""``, and the templates render plain text instead of a link, rather
than a page failing on ``NoReverseMatch``.

Plain ``reverse()`` per link: a cache of reversed patterns saved too little of any page's
time to be worth its code (``benchmarks/bench_pages.py --layers``). Within one page,
`RecordUrls` reverses each record once: the paste page links most records three times.

The one rule for which URLs from record data may become links.

Record fields are untrusted (imported from the dataset, edited by curators), so a URL in
them is rendered as a link only when it is an absolute ``http``/``https`` URL with a host
and nothing a browser would reinterpret: no ``javascript:``/``data:`` schemes, no
scheme-relative ``//host`` forms, no whitespace or control characters (browsers strip
those, which turns ``java\\tscript:`` back into a script URL). Anything else is shown as
plain text. The record page and the admin both ask this function, so a URL is a link in
both places or in neither.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

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


class RecordUrls(dict[str, str]):
    """Record id -> `record_url`, each reversed on first use: one page that links a
    record from its card, its summary row and its Markdown copy reverses it once. Made
    per page (a page's own memo, not a cache kept between requests)."""

    def __missing__(self, record_id: str) -> str:
        url = self[record_id] = record_url(record_id)
        return url


def tag_url(name: str) -> str:
    """The tag's page (``/tags/<name>/``)."""
    return _link("tag_detail", str(name))


def tag_links(tags: list[str] | None) -> list[tuple[str, str]]:
    """``(name, url)`` for each tag of a record's list, in its order."""
    return [(str(tag), tag_url(str(tag))) for tag in (tags or [])]


LINK_SCHEMES = frozenset({"http", "https"})


def source_host_name(url: str) -> str:
    """What a source link is called on a page: "GitHub" for a repository there, "the
    package index" for a release's file read on PyPI's inspector, "the source" otherwise
    (``url`` as `safe_external_url` returns it)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "github.com":
        return "GitHub"
    if host == "inspector.pypi.io":
        return "the package index"
    return "the source"


def safe_external_url(url: str | None) -> str:
    """``url`` (stripped) if it may be rendered as a link, else ``""``."""
    if not url:
        return ""
    url = url.strip()
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in LINK_SCHEMES or not parts.hostname:
        return ""
    return url


_SHA = re.compile(r"[0-9a-f]{7,64}")


def commit_url(sha: str, *, given: str = "", source_url: str | None = None) -> str:
    """A link to commit ``sha``: the history's own ``url`` when it is a safe link, else one
    made on the repository of ``source_url`` (a record's ``githubUrl``) when it is on
    GitHub, else ``""``."""
    own = safe_external_url(given)
    if own:
        return own
    source = safe_external_url(source_url)
    if not source or not _SHA.fullmatch(sha.lower()):
        return ""
    parts = urlsplit(source)
    owner_repo = [p for p in parts.path.split("/") if p][:2]
    if (parts.hostname or "").lower() != "github.com" or len(owner_repo) != 2:
        return ""
    owner, repo = (quote(p, safe="") for p in owner_repo)
    return f"https://github.com/{owner}/{repo}/commit/{sha.lower()}"
