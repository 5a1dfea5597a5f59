"""Which existing record a learned site is: its identity across learns.

A site is the same site when it is in the same repository and file and formats the same
message template, wherever its line moved. That is also how a site finds the dataset's
own record of it, whose ``id`` hashes the line and so can never be recomputed: the key is
built from what both sides carry, ``repo``, ``filePath`` and ``errorMessage``. Whitespace
is normalised because a template split over source lines (implicit concatenation,
a reflowed literal) may gain or lose line breaks and indentation without changing what a
user sees pasted on one line.

The same message raised at two places of one file has one key (about one dataset record
in six shares its key with another: ``Unable to convert {} ({}) to {}`` thrown at seven
places of one Java file), so one key may name several records: `pair_in_order` pairs the
sites of one key with its records by rank of line, the first site with the first record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import zip_longest

__all__ = ["REPLACEMENT", "normalise_template", "pair_in_order", "site_key"]

#: What a NUL in a template becomes in a record (`kb.extract.records`); the key reads it the
#: same way, so the site and its stored record keep one key.
REPLACEMENT = "\ufffd"


def normalise_template(template: str) -> str:
    """``template`` with every run of whitespace one space, and none at either end (and a
    NUL read as `REPLACEMENT`, as records store it)."""
    return " ".join(template.replace("\x00", REPLACEMENT).split())


def site_key(repo: str, path: str, template: str) -> str:
    """The identity of a raising site across learns: same repository, file and message
    template (whitespace-normalised) -> same key, whatever the line."""
    text = "\x00".join((repo, path, normalise_template(template)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def pair_in_order(
    learned: Sequence[int], existing: Sequence[int]
) -> list[tuple[int | None, int | None]]:
    """Pairs of indexes (into ``learned``, into ``existing``) for the sites and records of
    one key, given their line numbers: matched by rank of line, the surplus of either side
    paired with ``None`` (a new site, a site gone)."""
    new = sorted(range(len(learned)), key=learned.__getitem__)
    old = sorted(range(len(existing)), key=existing.__getitem__)
    return list(zip_longest(new, old))
