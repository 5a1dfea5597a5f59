"""Confirming scan hits: the ids Hyperscan reports become `Candidate`s, or nothing.

Why this exists apart from `engine.py`: the engine owns the compiled shards and the
record keys (building, deltas, pickling); this module owns what happens to one paste's
hits once the scan is done -- a bounded window around each hit line, the template
confirmers of `confirm.py` (or the `regex` package with a timeout for opaque patterns),
the time budget per paste, and the similarity fallback when nothing matched surely.
Nothing here imports Django or keeps state between calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Set

import regex

from .confirm import Loose, fuzzy_literal, loose_find, strict_find
from .patterns import Analysis
from .rank import Candidate
from .suggest import error_line_spans, similar_hits
from .textmap import HitLine, window_start

CONFIRM_TIMEOUT_S = 0.02  # per regex confirm
CONFIRM_LINES_PER_PATTERN = 3  # hit lines tried per pattern before giving up on it
CONFIRM_BUDGET_S = 0.5  # confirm time per paste (from the end of the scan); the rest is
# reported as unconfirmed scan hits in `groups`
MAX_HEADS_PER_LINE = 24  # prefix-only hits confirmed per line (see _heads_worth_trying)
WINDOW_EXTRA_LINES = 3  # lines above the hit line a relaxed match may start on
WINDOW_MAX_CHARS = 16_384
_TRAILING_JUNK = " \t\r\"'`…)]}>"

AnalysisOf = Callable[[int], Analysis]  # pattern id -> its (memoised) analysis


def _literal_spans(a: Analysis, start: int, captures: list[str]) -> tuple[tuple[int, int], ...]:
    """Where an exact template match read its literal pieces (from the captures' lengths)."""
    if not a.pieces or len(captures) != sum(p.text is None for p in a.pieces):
        return ()
    out = []
    pos = start
    caps = iter(captures)
    for p in a.pieces:
        if p.text is None:
            pos += len(next(caps))
        else:
            out.append((pos, pos + len(p.text)))
            pos += len(p.text)
    return tuple(out)


def confirm_hits(
    ntext: str,
    full: dict[int, dict[int, HitLine]],
    heads: dict[int, dict[int, HitLine]],
    analysis: AnalysisOf,
    notes: list[str],
    weight: Callable[[int], int] | None = None,
    code_lines: Set[int] = frozenset(),
) -> list[Candidate]:
    """Confirm whole-pattern hits (`full`), then prefix-only hits (`heads`), in budget.

    ``weight`` (pattern id -> a cheap size, e.g. its length) orders crowded lines'
    prefix-only hits without analysing every pattern (default: literal characters).
    ``code_lines`` are the starts of lines a traceback quotes from source code: a
    pattern is confirmed on them only when no line of the paste's own output matches it
    (the exception line below the quote carries the values; the quote, placeholders).
    """
    deadline = time.perf_counter() + CONFIRM_BUDGET_S
    out: list[Candidate] = []
    order = sorted(full, key=lambda pid: -analysis(pid).literal_chars)
    timed_out = 0
    for pid in order:
        if time.perf_counter() > deadline:
            notes.append("confirm budget exhausted; some scan hits were not confirmed")
            break
        a = analysis(pid)
        quoted: Candidate | None = None
        plain = attempts = 0
        for line in full[pid].values():
            if plain >= CONFIRM_LINES_PER_PATTERN or attempts >= 2 * CONFIRM_LINES_PER_PATTERN:
                break
            code = line.cstart in code_lines
            if code and quoted is not None:
                continue
            plain += not code
            attempts += 1
            floor = 0 if code or not code_lines else _below_code(ntext, line.cstart, code_lines)
            try:
                c = confirm_one(ntext, pid, a, line, floor)
            except TimeoutError:
                timed_out += 1
                continue
            if c is not None and c.line_start in code_lines:
                c.code = True
                quoted = quoted or c
            elif c is not None:
                out.append(c)
                quoted = None
                break
        if quoted is not None:
            out.append(quoted)
    if timed_out:
        # said, not hidden: whether a regex finishes within its timeout depends on the
        # machine, so the report must not look complete when one did not
        notes.append(f"confirm timed out {timed_out} time(s) on opaque patterns; not confirmed")
    done = {c.pid for c in out}
    size = weight or (lambda pid: analysis(pid).literal_chars)
    tried = _heads_worth_trying(heads, full, done, size)
    for pid, by_line in heads.items():
        if pid in done or time.perf_counter() > deadline:
            continue
        lines = [
            line
            for line in list(by_line.values())[:CONFIRM_LINES_PER_PATTERN]
            if (pid, line.number) in tried
        ]
        if not lines:
            continue  # crowded out on every line: not worth its analysis either
        a = analysis(pid)
        best: Candidate | None = None
        for line in lines:
            c = confirm_truncated(ntext, pid, a, line.cstart, line.cend)
            if c is None:
                continue
            c.code = c.line_start in code_lines
            if best is None or (best.code, c.score) > (c.code, best.score):
                best = c
        if best is not None:
            out.append(best)
    return out


def _heads_worth_trying(
    heads: dict[int, dict[int, HitLine]],
    full: dict[int, dict[int, HitLine]],
    done: set[int],
    size: Callable[[int], int],
) -> set[tuple[int, int]]:
    """(pattern, line) pairs of prefix-only hits to confirm: per line, the
    `MAX_HEADS_PER_LINE` largest patterns (by ``size``).

    A line shares its first words with every record worded alike (in a large dataset,
    dozens of versions of one message); walking each of them loosely made the work per
    line grow with the number of look-alikes. The longest ones can match the most text,
    so they are tried first and the work per line stays bounded.
    """
    by_line: dict[int, list[int]] = {}
    for pid, lines in heads.items():
        if pid in done:
            continue
        for number in lines:
            if number not in full.get(pid, ()):
                by_line.setdefault(number, []).append(pid)
    tried: set[tuple[int, int]] = set()
    for number, pids in by_line.items():
        if len(pids) > MAX_HEADS_PER_LINE:
            pids = sorted(pids, key=lambda pid: -size(pid))
            pids = pids[:MAX_HEADS_PER_LINE]
        tried.update((pid, number) for pid in pids)
    return tried


def _from_match(pid: int, a: Analysis, m: regex.Match[str], offset: int, ntext: str) -> Candidate:
    """A confirmed match of an opaque (non-template) regex."""
    captures = [g for g in m.groups() if g is not None]
    return make_candidate(
        pid, a, "exact", offset + m.start(), offset + m.end(), ntext, captures, a.literal_chars
    )


def make_candidate(
    pid: int,
    a: Analysis,
    kind: str,
    start: int,
    end: int,
    ntext: str,
    captures: list[str],
    exact: int,
    tail: int = -1,
) -> Candidate:
    """A `Candidate` for the span [start, end) of `ntext` (its line found around it)."""
    ls = ntext.rfind("\n", 0, start) + 1
    le = ntext.find("\n", start)
    le = len(ntext) if le < 0 else le
    line_no = ls  # a position, not a number: only its order is used (no O(n) count)
    return Candidate(
        pid, kind, line_no, start, end, ls, ntext[ls:le], captures, exact,
        a.literal_chars, a.generic, tail, lead=bool(a.pieces and a.pieces[0].text is None),
        literals=_literal_spans(a, start, captures) if kind == "exact" else (),
    )  # fmt: skip


def _below_code(ntext: str, start: int, code_lines: Set[int]) -> int:
    """Where a window above the line at ``start`` must begin so that it holds no quoted
    source line (0: none within reach)."""
    pos = start
    for _ in range(WINDOW_EXTRA_LINES + 1):
        if pos <= 0:
            return 0
        prev = ntext.rfind("\n", 0, pos - 1) + 1
        if prev in code_lines:
            return pos
        pos = prev
    return 0


def start_word(a: Analysis) -> bytes | None:
    """The word, in lowercase ASCII, on the line where any match `confirm_one` finds for
    a pattern starts: the exact search looks for the pattern's first literal and starts
    on its line, the relaxed one for its first word in any case, and the word is in the
    literal. None when there is no such word (an opaque pattern; a first literal of
    blanks) or it is not ASCII (its case folding is not bytes')."""
    if a.pieces is None:
        return None
    first = 1 if a.pieces[0].text is None else 0
    head = a.pieces[first].text if first < len(a.pieces) else None
    word = next((p.text.strip() for p in a.fine_pieces if p.text and p.text.strip()), "")
    word = word.lower()
    if not head or not word or not word.isascii() or word not in head.lower():
        return None
    return word.encode("ascii")


def confirm_one(
    ntext: str, pid: int, a: Analysis, line: HitLine, floor: int = 0
) -> Candidate | None:
    """Confirm a whole-pattern hit on `line`: exact, else relaxed, else nothing (raises
    TimeoutError when an opaque pattern's regex runs out of time). The window reaches a
    few lines up (a message may wrap), never above ``floor``."""
    extra = a.newlines + (WINDOW_EXTRA_LINES if a.template else 0)
    ws = max(floor, window_start(ntext, line.cstart, extra, WINDOW_MAX_CHARS))
    we = line.cend
    for _ in range(a.newlines):  # a trailing placeholder may sit on the next line
        if we >= len(ntext):
            break
        nxt = ntext.find("\n", we + 1)
        we = len(ntext) if nxt < 0 else nxt
    window = ntext[ws:we]
    if a.pieces is not None:
        found = strict_find(a.pieces, window)
        if found is not None:
            s, e, caps, tail = found
            return make_candidate(
                pid, a, "exact", ws + s, ws + e, ntext, caps, a.literal_chars,
                ws + tail if tail >= 0 else -1,
            )  # fmt: skip
    if a.pieces is None:  # TimeoutError past CONFIRM_TIMEOUT_S: the caller notes it
        m = a.strict_rx.search(window, timeout=CONFIRM_TIMEOUT_S)
        return None if m is None else _from_match(pid, a, m, ws, ntext)
    lo = loose_find(a.fine_pieces, window)
    if lo is not None and lo.complete:
        return _from_loose(pid, a, "relaxed", lo, ws, ntext)
    return None


def _from_loose(pid: int, a: Analysis, kind: str, lo: Loose, offset: int, ntext: str) -> Candidate:
    tail = offset + lo.tail if lo.tail >= 0 else -1
    return make_candidate(
        pid, a, kind, offset + lo.start, offset + lo.end, ntext, lo.captures, lo.exact, tail
    )


def confirm_truncated(ntext: str, pid: int, a: Analysis, start: int, end: int) -> Candidate | None:
    """Longest prefix of the pattern in [start, end): truncated or diverging pastes."""
    if a.pieces is None:
        return None
    window = ntext[start:end].rstrip(_TRAILING_JUNK)
    while window.endswith(("...", "…")):
        window = window.rstrip(".…").rstrip(_TRAILING_JUNK)
    lo = loose_find(a.fine_pieces, window)
    if lo is None:
        return None
    kind = "relaxed" if lo.complete else "truncated" if lo.reaches_end else "diverged"
    return _from_loose(pid, a, kind, lo, start, ntext)


def fallback(
    ntext: str,
    notes: list[str],
    similar: object | None,
    key_pid: Mapping[str, int],
    keys: list[list[str]],
    analysis: AnalysisOf,
) -> tuple[list[Candidate], list]:
    """No confident match: ask the similarity index which records the error-looking
    lines resemble, and confirm those loosely (prefix, case, spacing, small edits)."""
    if similar is None:
        return [], []
    spans = error_line_spans(ntext)
    hits = similar_hits(similar, ntext, spans, key_pid, keys)
    out: list[Candidate] = []
    for key, _score, _why, (ls, le) in hits:
        pid = key_pid[key]
        a = analysis(pid)
        if not a.template:
            continue
        ws = window_start(ntext, ls, WINDOW_EXTRA_LINES * 2, WINDOW_MAX_CHARS // 4)
        we = le
        for _ in range(WINDOW_EXTRA_LINES * 4):  # a message may continue below
            nxt = ntext.find("\n", we + 1)
            if we >= len(ntext) or we - ls > WINDOW_MAX_CHARS // 4:
                break
            we = len(ntext) if nxt < 0 else nxt
        best = confirm_truncated(ntext, pid, a, ws, we)
        if best is not None and best.kind != "relaxed":
            near = confirm_truncated(ntext, pid, a, ls, le)  # ends at this line?
            if near is not None and near.literal_exact >= best.literal_exact:
                best = near
        got, fs, fe = fuzzy_literal(a, ntext[ls:le])
        if got > (best.literal_exact if best else 0):
            best = make_candidate(pid, a, "fuzzy", ls + fs, ls + fe, ntext, [], got)
        if best is not None:
            out.append(best)
    if hits:
        notes.append(f"no exact match; checked {len(hits)} similar records loosely")
    return out, hits
