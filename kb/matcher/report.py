"""Turning ranked candidates into the `MatchReport` the callers see.

Separate from the engine so that what is shown (offsets mapped back to the original
paste, one line of reason per match, suggestions in one list, per-record groups over a
whole log) can change without touching scanning or ranking.
"""

from __future__ import annotations

from typing import Any

from .rank import Candidate, explain
from .textmap import HitLine
from .types import Group, Match, MatchReport, Suggestion

SPECIFIC_CHARS = 24  # literal characters at which a pattern counts as fully specific


def build_report(
    keys: list[list[str]],
    norm: Any,
    sure: list[Candidate],
    unsure: list[tuple[Candidate, str]],
    sim_hits: list[tuple[str, float, str, tuple[int, int]]],
    full: dict[int, dict[int, HitLine]],
    notes: list[str],
    elapsed_ms: float,
) -> MatchReport:
    matches: list[Match] = []
    for pos, c in enumerate(sure):
        os_, oe = norm.to_original(c.start, c.end)
        oline = norm.line_of(os_)
        ks = keys[c.pid]
        matches.append(
            Match(
                key=ks[0],
                line=oline,
                span=(os_, oe),
                text=norm.original[os_:oe],
                captures=c.captures,
                score=c.score,
                literal_chars=c.literal_exact,
                coverage=round(c.coverage, 4),
                reason=explain(c, pos, len(sure), oline),
                same_message=ks[1:],
                kind=c.kind,
            )
        )
    suggestions: list[Suggestion] = []
    for c, why in unsure:
        os_, _ = norm.to_original(c.start, c.end)
        oline = norm.line_of(os_)
        # how much of a specific message this is: a one-word pattern never scores high
        sim = round(min(c.coverage, c.literal_total / SPECIFIC_CHARS), 4)
        reason = f"pattern matched on line {oline} but not confidently: {why}"
        suggestions.append(Suggestion(keys[c.pid][0], sim, reason, oline))
    seen = {s.key for s in suggestions} | {m.key for m in matches}
    for key, score, why, (ls, _le) in sim_hits:
        if key not in seen and not matches:
            oline = norm.line_of(norm.to_original(ls, ls)[0])
            suggestions.append(Suggestion(key, score, f"similar message: {why}", oline))
            seen.add(key)
    suggestions.sort(key=lambda s: -s.similarity)
    groups = _groups(keys, norm, full, {c.pid for c in sure})
    return MatchReport(matches, suggestions, groups, norm, elapsed_ms, notes)


def _groups(
    keys: list[list[str]], norm: Any, full: dict[int, dict[int, HitLine]], sure: set[int]
) -> list[Group]:
    """Per record: lines of the whole text where its pattern's scan hit."""
    out: list[Group] = []
    for pid, by_line in full.items():
        if len(by_line) == 1:  # the common case in a whole log: one line, one look-up
            (first,) = by_line.values()
            fl = ll = norm.line_of(norm.to_original(first.cstart, first.cstart)[0])
        else:
            # extremes of the *original* offsets: a variant line (joined, decoded) comes
            # after its source lines in the normalised text but maps back to them, so the
            # first and last normalised lines need not be the first and last original ones
            offs = [norm.to_original(h.cstart, h.cstart)[0] for h in by_line.values()]
            fl = norm.line_of(min(offs))
            ll = norm.line_of(max(offs))
        out.append(Group(keys[pid][0], len(by_line), fl, ll, pid in sure))
    out.sort(key=lambda g: (not g.confident, -g.count, g.first_line))
    return out
