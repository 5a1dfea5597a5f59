"""Matcher core: which known error record does a pasted log contain?

Pure Python (no Django). See docs/matcher-interface.md for the contract; the pieces are
`patterns` (admission and derived regex forms), `shards` (Hyperscan databases, cached),
`engine` (scan, confirm, report), `rank` (confidence and order) and `suggest`.
"""

from __future__ import annotations

from .engine import Matcher
from .patterns import analyse
from .types import Admission, Group, Match, MatchReport, PasteTooLarge, PatternSpec, Suggestion

__all__ = [
    "Admission",
    "Group",
    "Match",
    "MatchReport",
    "Matcher",
    "PasteTooLarge",
    "PatternSpec",
    "Suggestion",
    "admit_pattern",
]


def admit_pattern(pattern: str) -> Admission:
    """Can this pattern be matched, by which engine, and how specific is it?"""
    from .shards import HS_FLAGS_OPAQUE, HS_FLAGS_TEMPLATE, _hs_accepts, _re2_accepts

    a = analyse(pattern)
    if not a.ok:
        return Admission(False, None, a.reason, a.generic, float(a.literal_chars))
    if a.template:
        err = _hs_accepts(a.scan_form(), HS_FLAGS_TEMPLATE)
    else:
        err = _hs_accepts(pattern, HS_FLAGS_OPAQUE)
    if err is None:
        return Admission(True, "hyperscan", None, a.generic, float(a.literal_chars))
    err2 = _re2_accepts(pattern)
    if err2 is None:
        return Admission(True, "re2", None, a.generic, float(a.literal_chars))
    return Admission(
        False, None, f"Hyperscan: {err}; RE2: {err2}", a.generic, float(a.literal_chars)
    )
