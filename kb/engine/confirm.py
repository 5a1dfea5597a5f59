"""Confirming a scan hit without compiling a regex: exact, loose, prefix and fuzzy.

Template patterns (literal text and `(.+?)` placeholders, which is every record in the
dataset) are confirmed here with `str.find`, so a worker never pays the `regex`
package's compile (costly per pattern) on the request path, and nothing here can
backtrack: every function is a bounded number of linear scans of a bounded window.

* `strict_find`: exactly what Python `re.search` would report (span and captures);
* `loose_find`: the longest prefix of the pattern, ignoring case and spacing; tells a
  complete-but-retyped message from a truncated paste and from a diverging one;
* `fuzzy_literal`: rapidfuzz alignment of the literal pieces, for near misses only.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from .patterns import Analysis, Piece

FUZZY_MIN_PIECE = 8  # shorter literal pieces are not aligned fuzzily (too noisy)
FUZZY_MIN_SCORE = 85.0


def fuzzy_literal(analysis: Analysis, text: str) -> tuple[int, int, int]:
    """Align the pattern's literal pieces, in order, to `text` allowing small edits.

    Returns (literal characters matched, start, end) where a piece aligned with
    similarity s counts len(piece) * s characters and unaligned pieces count nothing.
    Used only for near-miss candidates (rapidfuzz, bit-parallel: cheap per piece).
    """
    assert analysis.pieces is not None
    low = text.lower()
    pos = 0
    matched = 0.0
    start = end = -1
    for p in analysis.pieces:
        if p.text is None:
            continue
        lit = " ".join(p.text.split()).lower()
        if len(lit) < FUZZY_MIN_PIECE:
            i = low.find(lit, pos) if lit else -1
            if i >= 0 and lit:
                matched += len(p.text.strip())
                start = i if start < 0 else start
                pos = end = i + len(lit)
            continue
        al = fuzz.partial_ratio_alignment(lit, low[pos:], processor=None)
        if al is None or al.score < FUZZY_MIN_SCORE:
            continue
        matched += len(p.text.strip()) * al.score / 100
        s, e = pos + al.dest_start, pos + al.dest_end
        start = s if start < 0 else start
        pos = end = e
    return int(matched), max(start, 0), max(end, 0)


MAX_STARTS = 64  # occurrences of the first literal tried per window


def strict_find(pieces: list[Piece], text: str) -> tuple[int, int, list[str], int] | None:
    """`re.search` semantics of a template pattern (literals and `(.+?)`), without regex.

    Returns (start, end, captures, trailing-capture start or -1). A trailing placeholder
    captures the rest of its line (for display). Placeholders never span a newline, as
    in Python `re` without DOTALL. Taking the earliest occurrence of each literal after
    a placeholder is what the lazy `(.+?)` does, and is optimal: a later occurrence only
    leaves less room. Cost: a few `str.find` calls per start, at most MAX_STARTS starts.
    """
    lead = pieces[0].text is None
    first = 1 if lead else 0
    if first >= len(pieces):
        return None
    head = pieces[first].text
    assert head is not None
    last = len(pieces) - 1
    pos = 0
    for _ in range(MAX_STARTS):
        i = text.find(head, pos)
        if i < 0:
            return None
        pos = i + 1
        caps: list[str] = []
        if lead:
            ls = text.rfind("\n", 0, i) + 1
            if i - ls < 1:
                continue
            start = ls
            caps.append(text[ls:i])
        else:
            start = i
        cur = i + len(head)
        tail = -1
        ok = True
        for k in range(first + 1, len(pieces)):
            lit = pieces[k].text
            if lit is None:
                if k == last:
                    le = text.find("\n", cur)
                    le = len(text) if le < 0 else le
                    if le - cur < 1:
                        ok = False
                        break
                    tail = cur
                    caps.append(text[cur:le])
                    cur = le
                continue
            j = text.find(lit, cur + 1)
            if j < 0 or "\n" in text[cur:j]:
                ok = False
                break
            caps.append(text[cur:j])
            cur = j + len(lit)
        if ok:
            return start, cur, caps, tail
    return None


@dataclass(slots=True)
class Loose:
    """Result of `loose_find`: the longest prefix of a pattern found, leniently."""

    start: int
    end: int
    exact: int  # literal characters matched exactly (case included)
    captures: list[str]
    tail: int  # start of the trailing capture, or -1
    complete: bool  # every piece matched
    reaches_end: bool  # stopped because the text ended (a truncated paste)


def loose_find(fine: list[Piece], text: str) -> Loose | None:
    """The longest prefix of a template pattern in `text`, ignoring case and spacing.

    Words of the literal text are matched in order, separated by any whitespace
    (newlines included: a re-wrapped message); placeholders may be empty but never span
    a newline. Stops at the first word that does not follow; if the text ends there
    (or inside that word) the paste was truncated. Pure `str.find`, no regex compile.
    """
    low = text.lower()
    if len(low) != len(text):  # rare case-mapping that changes length: stay exact
        low = text
    n = len(text)
    found = next(
        ((k, p.text) for k, p in enumerate(fine) if p.text is not None and p.text.strip()), None
    )
    if found is None:
        return None
    first, head_text = found
    head = head_text.strip().lower()
    best: Loose | None = None
    pos = 0
    for _ in range(MAX_STARTS):
        i = low.find(head, pos)
        if i < 0:
            break
        pos = i + 1
        got = _walk(fine, first, text, low, i, n)
        if best is None or got.exact > best.exact:
            best = got
        if got.complete:
            break
    return best


def _walk(fine: list[Piece], first: int, text: str, low: str, i: int, n: int) -> Loose:
    caps: list[str] = []
    if first > 0:  # leading placeholder: from the line start
        ls = text.rfind("\n", 0, i) + 1
        caps.append(text[ls:i])
        start = ls
    else:
        start = i
    exact = 0
    cur = i
    gap = False
    tail = -1
    last = len(fine) - 1
    for k in range(first, len(fine)):
        piece = fine[k].text
        if piece is None:
            gap = True
            if k == last:
                le = text.find("\n", cur)
                le = n if le < 0 else le
                tail = cur
                caps.append(text[cur:le])
                cur = le
            continue
        word = piece.strip()
        if not word:
            exact += len(piece)
            continue
        lw = word.lower() if low is not text else word
        if gap:
            j = _after_gap(fine, k, text, low, lw, cur)
            if j < 0:
                return Loose(start, cur, exact, caps, tail, False, False)
            caps.append(text[cur:j].rstrip())
            gap = False
        else:
            j = cur
            while j < n and text[j].isspace():
                j += 1
            if not low.startswith(lw, j):
                rest = low[j:].strip()
                if len(rest) < len(lw) and lw.startswith(rest):  # the text stops here
                    exact += sum(1 for a, b in zip(word, text[j:], strict=False) if a == b)
                    return Loose(start, n, exact, caps, tail, False, True)
                return Loose(start, cur, exact, caps, tail, False, j >= n)
        seen = text[j : j + len(word)]
        if seen == word:  # the usual case: no per-character count
            same = len(word)
        else:
            same = sum(1 for a, b in zip(word, seen, strict=False) if a == b)
        exact += len(piece) - len(word) + same
        cur = j + len(word)
    return Loose(start, cur, exact, caps, tail, True, False)


def _after_gap(fine: list[Piece], k: int, text: str, low: str, lw: str, cur: int) -> int:
    """Where the word after a placeholder resumes: the first occurrence on the line that
    the next word also follows (a short word such as "." occurs inside values too)."""
    le = text.find("\n", cur)
    le = len(text) if le < 0 else le
    nxt = fine[k + 1].text if k + 1 < len(fine) else None
    nw = nxt.strip().lower() if nxt is not None and nxt.strip() else ""
    if low is text:
        nw = nxt.strip() if nxt else ""
    first = -1
    j = low.find(lw, cur, le)
    for _ in range(MAX_STARTS):
        if j < 0:
            break
        if first < 0:
            first = j
        if not nw:
            return j
        q = j + len(lw)
        while q < len(text) and text[q].isspace():
            q += 1
        if low.startswith(nw, q):
            return j
        j = low.find(lw, j + 1, le)
    return first
