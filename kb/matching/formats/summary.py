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
