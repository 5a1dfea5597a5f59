"""Turning ranked candidates into the `MatchReport` the callers see.

Separate from the engine so that what is shown (offsets mapped back to the original
paste, one line of reason per match, suggestions in one list, per-record groups over a
whole log) can change without touching scanning or ranking.
"""

from __future__ import annotations

from typing import Any

from .rank import Candidate
from .rootcause import Occurrences, order_groups
from .textmap import HitLine
from .types import Group, Match, MatchReport, Suggestion
from .worddiff import WordDiff, word_diff

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
    messages: dict[str, str] | None = None,
    order: bool = True,
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
                reason=_reason(c, pos, len(sure), oline),
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
        key = keys[c.pid][0]
        diff = _diff(messages, key, norm.text, c.start, c.end)
        suggestions.append(Suggestion(key, sim, reason, oline, diff))
    seen = {s.key for s in suggestions} | {m.key for m in matches}
    for key, score, why, (ls, le) in sim_hits:
        if key not in seen and not matches:
            oline = norm.line_of(norm.to_original(ls, ls)[0])
            diff = _diff(messages, key, norm.text, ls, le)
            suggestions.append(Suggestion(key, score, f"similar message: {why}", oline, diff))
            seen.add(key)
    suggestions.sort(key=lambda s: -s.similarity)
    groups = _groups(keys, norm, full, {c.pid for c in sure}, order)
    return MatchReport(matches, suggestions, groups, norm, elapsed_ms, notes)


def _reason(c: Candidate, rank: int, n: int, orig_line: int) -> str:
    """The one line of reason a match reports: how it matched, and where it ranked."""
    how = {
        "exact": "",
        "relaxed": " (ignoring case/whitespace differences)",
        "truncated": " (the paste stops before the end of the message)",
        "diverged": " (the text departs from the message after that)",
        "fuzzy": " (allowing small differences in wording)",
    }[c.kind]
    text = (
        f"matched {c.literal_exact} literal characters of {c.literal_total} "
        f"({c.coverage:.0%}) on line {orig_line}{how}"
    )
    if n > 1:
        text += "; most specific of" if rank == 0 else f"; ranked {rank + 1} of"
        text += f" {n} confident candidates"
    if c.wrapper:
        text += "; it wraps another matched message"
    if c.overread:
        text += "; another match reads more of this line"
    return text


def _diff(
    messages: dict[str, str] | None, key: str, text: str, start: int, end: int
) -> WordDiff | None:
    """The words reworded between the record's message and the pasted lines it was
    suggested for (the lines holding ``start``..``end`` of the normalised text)."""
    message = (messages or {}).get(key)
    if not message:
        return None
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", max(end - 1, start))
    return word_diff(message, text[ls : len(text) if le < 0 else le])


def _groups(
    keys: list[list[str]],
    norm: Any,
    full: dict[int, dict[int, HitLine]],
    sure: set[int],
    order: bool = True,
) -> list[Group]:
    """Per record: lines of the whole text where its pattern's scan hit, in the order to
    read them (`rootcause`), or by count when ``order`` is off (the benchmark's baseline)."""
    items: list[Occurrences] = []
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
        starts = [h.cstart for h in by_line.values()]
        items.append(Occurrences(keys[pid][0], len(by_line), fl, ll, pid in sure, starts))
    if order:
        return order_groups(norm.text, items)
    out = [Group(i.key, i.count, i.first_line, i.last_line, i.confident) for i in items]
    out.sort(key=lambda g: (not g.confident, -g.count, g.first_line))
    return out
