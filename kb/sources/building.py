"""The two calls into ``kb.extract`` that turn a site into a record and name its identity.

``kb.extract.records.to_record`` and ``kb.extract.identity.site_key`` (docs/
learning-a-codebase.md) are imported when first used, so this app loads, and says what
is missing, on a tree where the record builder is not installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kb.extract.sites import Site
from kb.sources.readers import SourceError

__all__ = ["site_key", "to_records"]


def to_records(
    sites: Sequence[Site], *, repo: str, revision: str, lines: Sequence[str], url: str | None
) -> list[dict[str, Any]]:
    """The records of one file's sites, in order: ``kb.extract.records.to_records``, which
    leaves out a site with too little literal text to be a record and gives the same
    message raised twice in one function two ids; where only ``to_record`` is there, it
    for each site (a ``ValueError``, too little text, leaves the site out)."""
    try:
        from kb.extract import records  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        raise SourceError("kb.extract.records (the record builder) is not installed") from None
    if hasattr(records, "to_records"):
        built: list[dict[str, Any]] = records.to_records(
            sites, repo=repo, revision=revision, lines=lines, url=url
        )
        return built
    out: list[dict[str, Any]] = []
    for site in sites:
        try:
            out.append(records.to_record(site, repo=repo, revision=revision, lines=lines, url=url))
        except ValueError:
            continue
    return out


def site_key(repo: str, path: str, template: str) -> str:
    """A site's identity across learns (``kb.extract.identity.site_key``)."""
    try:
        from kb.extract import identity  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        raise SourceError("kb.extract.identity (site identity) is not installed") from None
    key: str = identity.site_key(repo, path, template)
    return key
