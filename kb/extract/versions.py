"""Release names and their order: which of two releases came first.

A release is named by its version as people say it (``1.3.24``, ``3.5.0-rc.1``, ``2.0b1``),
whatever the tag that marks it (``rel_1_3_24``, ``v3.5.0-rc.1``): `version_of` reads the
version out of a tag, `version_key` orders versions. The order is the one PEP 440 and
semantic versioning agree on: numeric parts compared as numbers (``1.10`` after ``1.9``),
missing parts as zero (``1.4`` is ``1.4.0``), a pre-release before its release (``dev`` <
``alpha`` < ``beta`` < ``rc`` < the release < ``post``), so pre-releases sort to the right
of the releases before them and to the left of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["VersionError", "is_prerelease", "sorted_versions", "version_key", "version_of"]

_VERSION = re.compile(
    r"""
    ^v?(?P<nums>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>dev|a|alpha|b|beta|c|rc|pre|preview|m|milestone)[-_.]?(?P<pren>\d+)?)?
    (?:[-_.]?(?P<post>post|p|r)[-_.]?(?P<postn>\d+)?)?
    (?:[-+_.].*)?$
    """,
    re.VERBOSE | re.IGNORECASE,
)
# Rank of a pre-release kind against the release itself (``_FINAL``) and a post-release.
_PRE_RANK = {"dev": 0, "m": 1, "milestone": 1, "a": 2, "alpha": 2, "pre": 2, "preview": 2,
             "b": 3, "beta": 3, "c": 4, "rc": 4}  # fmt: skip
_FINAL = 5
_POST = 6
#: Numeric parts compared: enough for every scheme in use (``major.minor.patch.build``).
_PARTS = 4


class VersionError(ValueError):
    """A name that does not read as a version."""


def version_key(version: str) -> tuple[int, ...]:
    """A sort key for ``version``; raises `VersionError` for a name with no version."""
    m = _VERSION.match(version.strip())
    if not m:
        raise VersionError(f"not a version: {version[:60]!r}")
    nums = [int(n) for n in m["nums"].split(".")][:_PARTS]
    nums += [0] * (_PARTS - len(nums))
    if m["pre"]:
        stage, number = _PRE_RANK[m["pre"].lower()], int(m["pren"] or 0)
    elif m["post"]:
        stage, number = _POST, int(m["postn"] or 0)
    else:
        stage, number = _FINAL, 0
    return (*nums, stage, number)


def is_prerelease(version: str) -> bool:
    """True for a dev, alpha, beta, milestone or release-candidate version."""
    return version_key(version)[_PARTS] < _FINAL


def version_of(tag: str, pattern: str, separator: str = ".") -> str | None:
    """The version a tag names under ``pattern`` (a glob with one ``*``: ``rel_*``,
    ``v*``, ``client/v*``), with ``separator`` between its numbers (``_`` for
    ``rel_1_3_0``), written with dots; ``None`` when the tag does not match or what the
    ``*`` covers is not a version."""
    head, star, tail = pattern.partition("*")
    if (
        not star
        or not tag.startswith(head)
        or not tag.endswith(tail)
        or len(tag) < len(head) + len(tail)
    ):
        return None
    core = tag[len(head) : len(tag) - len(tail)]
    if separator != ".":
        core = core.replace(separator, ".")
    try:
        version_key(core)
    except VersionError:
        return None
    return core


def sorted_versions(versions: Iterable[str]) -> list[str]:
    """``versions`` oldest first; names that are not versions are left out."""
    keyed = []
    for version in versions:
        try:
            keyed.append((version_key(version), version))
        except VersionError:
            continue
    return [version for _key, version in sorted(keyed)]
