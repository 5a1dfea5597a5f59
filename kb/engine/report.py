"""Turning ranked candidates into the `MatchReport` the callers see.

Separate from the engine so that what is shown (offsets mapped back to the original
paste, one line of reason per match, suggestions in one list, per-record groups over a
whole log) can change without touching scanning or ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import replace
from typing import Any

from .evidence import QUOTED_ONLY, Weighed
from .rank import Candidate, order_key
from .rootcause import Occurrences, link_answers, order_groups
from .textmap import HitLine
from .types import (
    Alternative,
    Answer,
    Group,
    Match,
    MatchReport,
    ReleaseFit,
    Suggestion,
    Wording,
)
from .worddiff import LineWords, WordDiff, word_diff

SPECIFIC_CHARS = 24  # literal characters at which a pattern counts as fully specific


CLEAR = 2.0  # a reading of software the paste does not point at wins only with this
# many times the score of one it does point at (its match is then clearly better)


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
    judged: dict[int, tuple[list[str], Weighed]] | None = None,
    code_lines: Set[int] = frozenset(),
    *,
    wording_of: Callable[[int, str], Wording | None] | None = None,
    fits: dict[str, ReleaseFit] | None = None,
    fit_weight: dict[int, int] | None = None,
) -> MatchReport:
    """``wording_of(pid, key)`` names the older wording of ``key`` that pattern ``pid``
    is (an alias), ``fits`` the releases the paste places each record in, and
    ``fit_weight`` how much that agrees with each pattern's wording (`releases.place`)."""
    judged = judged or {}
    fits = fits or {}
    fit_weight = fit_weight or {}
    lines: LineWords = {}  # each pasted line's words, for every diff against it
    spans = [norm.to_original(c.start, c.end) for c in sure]
    clusters = _clusters(spans)
    weight = {
        c.pid: (judged[c.pid][1].weight if c.pid in judged else 0) + fit_weight.get(c.pid, 0)
        for c in sure
    }
    bests: list[int] = []  # index into sure of each cluster's best reading
    lost: dict[int, int] = {}  # index of an alternative -> index of the best it lost to
    for members in clusters:
        best = members[0]
        for i in members[1:]:
            if _beats(sure[i], sure[best], weight):
                best = i
        bests.append(best)
        for i in members:
            if i != best:
                lost[i] = best

    def key_of(i: int) -> tuple[bool, bool, float, bool, int, int]:
        c = sure[i]
        k = order_key(c)
        return (k[0], k[1], k[2] * (CLEAR if weight[c.pid] > 0 else 1.0), k[3], k[4], k[5])

    def record_of(i: int) -> str:
        pid = sure[i].pid
        return judged[pid][0][0] if pid in judged else keys[pid][0]

    bests.sort(key=key_of)
    # One record, one answer: a record read twice (its current wording and an older one,
    # on other lines) keeps its best reading, the other's lines count in its group; a
    # reading of the same text by the same record is no alternative to itself.
    chosen = {sure[i].pid: record_of(i) for i in bests}
    answered: set[str] = set()
    unique: list[int] = []
    for i in bests:
        if record_of(i) not in answered:
            answered.add(record_of(i))
            unique.append(i)
    bests = unique
    kept = set(bests)
    lost = {i: b for i, b in lost.items() if b in kept and record_of(i) not in answered}
    again: set[str] = set()
    for i in sorted(lost, key=key_of):
        if record_of(i) in again:
            del lost[i]
        again.add(record_of(i))
    ranked = bests + sorted(lost, key=key_of)
    built: dict[int, Match] = {}
    for pos, i in enumerate(ranked):
        c = sure[i]
        os_, oe = spans[i]
        oline = norm.line_of(os_)
        ks, w = judged.get(c.pid, (keys[c.pid], None))
        wording = wording_of(c.pid, ks[0]) if wording_of is not None else None
        reason = _reason(c, pos, len(ranked), oline)
        if i in lost:
            reason += "; an alternative reading of the text of a better match"
        built[i] = Match(
            key=ks[0],
            line=oline,
            span=(os_, oe),
            text=norm.original[os_:oe],
            captures=c.captures,
            score=c.score,
            literal_chars=c.literal_exact,
            coverage=round(c.coverage, 4),
            reason=reason,
            same_message=ks[1:],
            kind=c.kind,
            evidence=(*(w.notes if w is not None else ()), *((QUOTED_ONLY,) if c.quoted else ())),
            diff=(
                # a partial reading of an older wording differs from that wording
                _diff(
                    {ks[0]: wording.message} if wording else messages,
                    ks[0],
                    norm.text,
                    c.start,
                    c.end,
                    lines,
                )
                if c.kind != "exact" and i not in lost  # a card's title says it
                else None
            ),
            wording=wording,
            fit=fits.get(ks[0]),
        )
    matches = [built[i] for i in ranked]
    suggestions: list[Suggestion] = []
    for c, why in unsure:
        os_, _ = norm.to_original(c.start, c.end)
        oline = norm.line_of(os_)
        # how much of a specific message this is: a one-word pattern never scores high
        sim = round(min(c.coverage, c.literal_total / SPECIFIC_CHARS), 4)
        reason = f"pattern matched on line {oline} but not confidently: {why}"
        key = keys[c.pid][0]
        diff = _diff(messages, key, norm.text, c.start, c.end, lines)
        suggestions.append(Suggestion(key, sim, reason, oline, diff))
    if wording_of is not None:  # a record read in two wordings: one entry, its best
        matched = {m.key for m in matches}
        top: dict[str, Suggestion] = {}
        for sg in suggestions:
            if sg.key not in matched and (
                sg.key not in top or sg.similarity > top[sg.key].similarity
            ):
                top[sg.key] = sg
        suggestions = list(top.values())
    seen = {s.key for s in suggestions} | {m.key for m in matches}
    for key, score, why, (ls, le) in sim_hits:
        if key not in seen and not matches:
            oline = norm.line_of(norm.to_original(ls, ls)[0])
            diff = _diff(messages, key, norm.text, ls, le, lines)
            suggestions.append(Suggestion(key, score, f"similar message: {why}", oline, diff))
            seen.add(key)
    suggestions.sort(key=lambda s: -s.similarity)
    alt_pids = {sure[i].pid for i in lost}
    # a best reading without a scan hit line of its own (a cut-off or reworded message,
    # confirmed from a prefix) is an occurrence at its own line
    unscanned = [
        Occurrences(built[i].key, 1, built[i].line, built[i].line, True, [sure[i].line_start])
        for i in bests
        if all(h.cstart in code_lines for h in full.get(sure[i].pid, {}).values())
    ]
    groups = _groups(keys, norm, full, set(chosen), order, alt_pids, chosen, code_lines, unscanned)
    answers = _answers(bests, lost, sure, built, weight, groups)
    if order:
        answers = link_answers(answers, norm.original)
        groups = _in_answer_order(groups, answers)
    return MatchReport(matches, suggestions, groups, norm, elapsed_ms, notes, answers)


def _in_answer_order(groups: list[Group], answers: list[Answer]) -> list[Group]:
    """The groups with the answers' places, reasons and causes: the confident ones in the
    answers' order, then the others (scan hits short of confident) as they were."""
    by_key = {a.key: a for a in answers}
    confident = [g for g in groups if g.key in by_key]
    rest = [g for g in groups if g.key not in by_key]
    confident = [_placed(g, by_key[g.key].order, by_key[g.key].reason, by_key[g.key].cause)
                 for g in confident]  # fmt: skip
    confident.sort(key=lambda g: g.order)
    n = len(confident)
    return confident + [_placed(g, n + i + 1, g.reason, g.cause) for i, g in enumerate(rest)]


def _placed(g: Group, order: int, reason: str, cause: str | None) -> Group:
    """``g`` at ``order`` with ``reason`` and ``cause``: ``g`` itself when it has them
    already (the answers take their places from the groups, so most have)."""
    if g.order == order and g.reason == reason and g.cause == cause:
        return g
    return replace(g, order=order, reason=reason, cause=cause)


def _clusters(spans: list[tuple[int, int]]) -> list[list[int]]:
    """Indexes of matches whose spans overlap, chained (each piece of text read once);
    each cluster in the matches' own order."""
    idx = sorted(range(len(spans)), key=lambda i: spans[i])
    out: list[list[int]] = []
    end = -1
    for i in idx:
        s, e = spans[i]
        if out and s < end:
            out[-1].append(i)
            end = max(end, e)
        else:
            out.append([i])
            end = e
    for members in out:
        members.sort()
    return out


def _beats(c: Candidate, best: Candidate, weight: dict[int, int]) -> bool:
    """Does ``c`` (ranked lower) read the shared text better than ``best``? Only when
    the paste's evidence favours it and ``best``'s match is not clearly better."""
    wc, wb = weight[c.pid], weight[best.pid]
    if wc <= wb:
        return False
    return not (best.score >= CLEAR * c.score and not best.wrapper and not best.overread)


def _lost_why(
    alt: Candidate, best: Candidate, weight: dict[int, int], best_match: Match, alt_match: Match
) -> str:
    if weight[best.pid] > weight[alt.pid] and best_match.evidence:
        return f"the paste's context favours the other record: {best_match.evidence[0]}"
    if weight[best.pid] > weight[alt.pid] and alt_match.evidence:
        return f"the other record is likelier: {alt_match.evidence[0]}"
    if alt.wrapper:
        return "it wraps the other matched message, which says more"
    if alt.overread:
        return "the other match reads more of the same text"
    return (
        f"it matches {alt.literal_exact} fixed characters of its message, "
        f"the other {best.literal_exact}"
    )


def _answers(
    bests: list[int],
    lost: dict[int, int],
    sure: list[Candidate],
    built: dict[int, Match],
    weight: dict[int, int],
    groups: list[Group],
) -> list[Answer]:
    by_key = {g.key: g for g in groups}
    out: list[Answer] = []
    lost_to: dict[int, list[int]] = {}  # a best -> its alternatives, best scores first
    for i in sorted(lost, key=lambda i: -sure[i].score):
        lost_to.setdefault(lost[i], []).append(i)
    for b in bests:
        m = built[b]
        alts = tuple(
            Alternative(
                built[i].key, built[i].score, _lost_why(sure[i], sure[b], weight, m, built[i])
            )
            for i in lost_to.get(b, ())
        )
        g = by_key.get(m.key)
        if g is None:
            out.append(Answer(m, alts, 1, m.line, m.line, 0))
        else:
            out.append(
                Answer(m, alts, max(1, g.count), g.first_line, g.last_line, g.order, g.reason,
                       g.cause)
            )  # fmt: skip
    placed = [a for a in out if a.order]
    placed.sort(key=lambda a: a.order)
    return placed + [a for a in out if not a.order]


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
    messages: dict[str, str] | None,
    key: str,
    text: str,
    start: int,
    end: int,
    lines: LineWords | None = None,
) -> WordDiff | None:
    """The words reworded between the record's message and the pasted lines it was
    suggested for (the lines holding ``start``..``end`` of the normalised text)."""
    message = (messages or {}).get(key)
    if not message:
        return None
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", max(end - 1, start))
    return word_diff(message, text[ls : len(text) if le < 0 else le], lines)


def _groups(
    keys: list[list[str]],
    norm: Any,
    full: dict[int, dict[int, HitLine]],
    sure: set[int],
    order: bool = True,
    skip: Set[int] = frozenset(),
    chosen: dict[int, str] | None = None,
    code_lines: Set[int] = frozenset(),
    unscanned: list[Occurrences] | None = None,
) -> list[Group]:
    """Per record: lines of the whole text where its pattern's scan hit, in the order to
    read them (`rootcause`), or by count when ``order`` is off (the benchmark's baseline).

    A count is of occurrences in the paste: lines a traceback quotes from source code
    are not occurrences, and a line the normaliser added (a decoded or joined variant)
    counts as the original line it came from. The patterns in ``skip`` read the same text
    as a better match (its alternatives) and get no group of their own; ``chosen`` names
    the record the evidence put first among those sharing a pattern."""
    chosen = chosen or {}
    items: list[Occurrences] = list(unscanned or ())
    line_at: dict[int, int] = {}  # normalised line start -> original line number
    # a record read by its current wording and by an older one (an alias) on other lines
    # has one group: its lines gathered per record, each counted once
    lines_of: dict[str, dict[int, int]] = {}
    sure_of: dict[str, bool] = {}
    for o in items:
        lines_of[o.key] = {o.first_line: o.starts[0]} if o.starts else {}
        sure_of[o.key] = o.confident
    items = [o for o in items if not o.starts]
    for pid, by_line in full.items():
        if pid in skip:
            continue
        hits = [h for h in by_line.values() if h.cstart not in code_lines]
        if not hits:
            continue
        key = chosen.get(pid, keys[pid][0])
        firsts = lines_of.setdefault(key, {})  # original line -> first scanned start on it
        sure_of[key] = sure_of.get(key, False) or pid in sure
        for h in hits:
            line = line_at.get(h.cstart)
            if line is None:  # many patterns hit the same line: each line mapped once
                line = line_at[h.cstart] = norm.line_of(norm.to_original(h.cstart, h.cstart)[0])
            firsts.setdefault(line, h.cstart)
    for key, firsts in lines_of.items():
        if firsts:
            fl, ll = min(firsts), max(firsts)
            items.append(Occurrences(key, len(firsts), fl, ll, sure_of[key], list(firsts.values())))
    if order:
        return order_groups(norm.text, items)
    out = [Group(i.key, i.count, i.first_line, i.last_line, i.confident) for i in items]
    out.sort(key=lambda g: (not g.confident, -g.count, g.first_line))
    return out
