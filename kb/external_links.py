"""The one rule for which URLs from record data may become links.

Record fields are untrusted (imported from the dataset, edited by curators), so a URL in
them is rendered as a link only when it is an absolute ``http``/``https`` URL with a host
and nothing a browser would reinterpret: no ``javascript:``/``data:`` schemes, no
scheme-relative ``//host`` forms, no whitespace or control characters (browsers strip
those, which turns ``java\\tscript:`` back into a script URL). Anything else is shown as
plain text. The record page and the admin both ask this function, so a URL is a link in
both places or in neither.
"""

from __future__ import annotations

from urllib.parse import urlsplit

LINK_SCHEMES = frozenset({"http", "https"})


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
