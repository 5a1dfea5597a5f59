"""The known errors of a result, one entry per error, in the order a reader takes them.

The order and the counts are the answers' (``answers`` in the JSON shape: one per piece of
text read, root cause first, the same list the paste page's summary and cards show); the
other records read on the same text (``alternative_of`` set) are not errors of their own.
A shape without ``answers`` (an older server) is read by its groups: a group is a known
error only when its record also has a confident match (a group can be a bare scan hit).
Matches with neither follow in the matches' own order, so nothing confident is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class KnownError:
    record_id: str
    count: int
    first_line: int
    last_line: int
    match: dict[str, Any]  # the record's first confident match
    group: dict[str, Any] = field(default_factory=dict)  # its group (``reason`` if given)

    @property
    def reason(self) -> str:
        return str(self.group.get("reason") or "")


DASH = "\u2013"  # between the first and the last release of a range


def releases_said(m: dict[str, Any]) -> list[str]:
    """What a match's JSON says of releases, as sentences every format shows (plain text:
    each renderer escapes it its own way): the older wording the paste has, the release
    that removed the site, the releases the paste's own frames or version string fit."""
    out: list[str] = []
    w = m.get("wording")
    if isinstance(w, dict):
        first, last = w.get("first_release", ""), w.get("last_release", "")
        who = f"release {first} words" if first == last else f"releases {first}{DASH}{last} word"
        since = f"since {w['since']} it reads" if w.get("since") else "the current code reads"
        out.append(f"How {who} this error; {since}: {w.get('current_message', '')}")
    if m.get("removed_in"):
        out.append(f"Removed in {m['removed_in']}")
    fit = m.get("fits")
    if isinstance(fit, dict) and fit.get("ranges"):
        runs = " and ".join(
            f"release {a}" if a == b else f"releases {a}{DASH}{b}" for a, b in fit["ranges"]
        )
        if fit.get("by") == "version":
            out.append(f"Your paste's version string fits {runs} ({fit.get('shown', '')})")
        else:
            out.append(f"Your traceback's line numbers fit {runs} ({fit.get('shown', '')})")
    return out


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def occurrences(count: int, first: int, last: int) -> str:
    """Where a known error was seen, as both renderers say it."""
    if count == 1:
        return f"seen once, line {first}"
    return f"seen {count} times, lines {first}-{last}"


def headline(found: list[KnownError], verb: str) -> str:
    """``2 known errors <verb> (5 occurrences)``."""
    seen = sum(k.count for k in found)
    return f"{plural(len(found), 'known error')} {verb} ({plural(seen, 'occurrence')})"


def known_errors(data: dict[str, Any]) -> list[KnownError]:
    first: dict[str, dict[str, Any]] = {}
    for m in data.get("matches", []):
        if not m.get("alternative_of"):
            first.setdefault(m["record_id"], m)
    out: list[KnownError] = []
    rows = data["answers"] if "answers" in data else data.get("groups", [])
    for g in rows:
        m = first.pop(g["record_id"], None)
        if m is not None:
            out.append(
                KnownError(g["record_id"], g["count"], g["first_line"], g["last_line"], m, g)
            )
    for record_id, m in first.items():
        out.append(KnownError(record_id, 1, m["line"], m["line"], m))
    return out
