"""Analysis of one record pattern: admission, specificity and the forms the engines run.

A record's `messagePattern` is written for Python `re`. The matcher needs several
derived forms of it, all computed here so that the engine and the ranker agree:

* the *scan* form that Hyperscan (or RE2) runs over the whole paste to learn which
  patterns occur (ids only). For template-style patterns (escaped literal text with
  `(.+?)` placeholders, which is what the dataset's extractor writes) the scan form is
  deliberately a little looser than the record: case-insensitive, any whitespace run for
  a space, empty placeholders allowed, leading/trailing placeholders dropped. Real pastes
  are retyped, re-wrapped and re-cased; the confirm step tells exact from relaxed.
* an optional *head* form (the pattern's first ~28 literal characters) used to find
  messages the user truncated; confirmed with a partial match that must run to the end of
  the line.
* the strict and relaxed *confirm* regexes (the `regex` package, always run with a
  timeout on a bounded window), with one group per literal piece and per placeholder so
  that captures and literal characters actually matched can be read off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import regex
from rapidfuzz import fuzz

try:  # Python 3.11+: the parser moved to a private module
    import re._constants as sre_constants
    import re._parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

PLACEHOLDER = "(.+?)"
MAX_REPEAT = 1000  # larger counted repeats are refused (compile blow-up)
GENERIC_LITERAL_CHARS = 12  # fewer required literal characters -> generic
GENERIC_SINGLE_WORD_CHARS = 16  # one word and fewer literal characters -> generic
HEAD_LITERAL_CHARS = 28  # literal characters in a truncation head
HEAD_MIN_EXTRA = 10  # a head only when the pattern has this many literal chars beyond it
_META = set(".^$*+?{}[]|()")
_WORD = re.compile(r"[^\W_]{2,}")


@dataclass(frozen=True, slots=True)
class Piece:
    """A literal run (text) or a placeholder (text is None)."""

    text: str | None


def parse_template(pattern: str) -> list[Piece] | None:
    """Split a template-style pattern into literal runs and `(.+?)` placeholders.

    Returns None when the pattern uses any other regex syntax (it is then treated as an
    opaque regex: no relaxation, confirm exactly as written).
    """
    pieces: list[Piece] = []
    buf: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith(PLACEHOLDER, i):
            if buf:
                pieces.append(Piece("".join(buf)))
                buf = []
            if not pieces or pieces[-1].text is not None:
                pieces.append(Piece(None))
            i += len(PLACEHOLDER)
            continue
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            d = pattern[i + 1]
            if d == "n":
                buf.append("\n")
            elif d == "t":
                buf.append("\t")
            elif d.isalnum() or d == "_":
                return None  # \d, \w, \b, \u..., backrefs: real regex syntax
            else:
                buf.append(d)
            i += 2
            continue
        if c in _META:
            return None
        buf.append(c)
        i += 1
    if buf:
        pieces.append(Piece("".join(buf)))
    return pieces


def _sre_literal_chars(tree: sre_parse.SubPattern) -> int:
    """Minimum number of literal characters any match of the parsed regex contains."""
    total = 0
    for op, av in tree:
        if op is sre_constants.LITERAL:
            total += 1
        elif op is sre_constants.SUBPATTERN:
            total += _sre_literal_chars(av[-1])
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) or (
            hasattr(sre_constants, "POSSESSIVE_REPEAT") and op is sre_constants.POSSESSIVE_REPEAT
        ):
            lo, _hi, sub = av
            total += min(lo, MAX_REPEAT) * _sre_literal_chars(sub)
        elif op is sre_constants.BRANCH:
            total += min((_sre_literal_chars(b) for b in av[1]), default=0)
        elif op is getattr(sre_constants, "ATOMIC_GROUP", None):
            total += _sre_literal_chars(av)
    return total


def _sre_problems(tree: sre_parse.SubPattern) -> str | None:
    """Constructs neither Hyperscan nor RE2 runs, or that blow up compilation."""
    for op, av in tree:
        if op in (sre_constants.GROUPREF, sre_constants.GROUPREF_EXISTS):
            return "backreferences are not supported (no linear-time engine runs them)"
        if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            return "lookaround assertions are not supported (no linear-time engine runs them)"
        subs: list[sre_parse.SubPattern] = []
        if op is sre_constants.SUBPATTERN:
            subs = [av[-1]]
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) or (
            hasattr(sre_constants, "POSSESSIVE_REPEAT") and op is sre_constants.POSSESSIVE_REPEAT
        ):
            lo, hi, sub = av
            if (hi is not sre_constants.MAXREPEAT and hi > MAX_REPEAT) or lo > MAX_REPEAT:
                return f"counted repeat above {MAX_REPEAT} ({{{lo},{hi}}}) is refused"
            subs = [sub]
        elif op is sre_constants.BRANCH:
            subs = list(av[1])
        elif op is getattr(sre_constants, "ATOMIC_GROUP", None):
            subs = [av]
        for sub in subs:
            problem = _sre_problems(sub)
            if problem:
                return problem
    return None


def _hs_escape(text: str, *, relaxed: bool) -> str:
    """Escape literal text for Hyperscan (byte mode: non-ASCII as UTF-8 bytes).

    Relaxed: a run of several whitespace characters (or a newline/tab) becomes \\s+, so
    `a.  b` also matches `a. b` and a message broken over lines. A single space stays a
    space: turning every space into a class multiplies compile time (measured).
    """
    out: list[str] = []
    for run in re.findall(r"\s+|\S+", text):
        if run.isspace():
            if relaxed and run != " ":
                out.append(r"\s+")
                continue
            if run == " ":
                out.append("\\x20")
                continue
        for c in run:
            if c.isascii() and c.isalnum():
                out.append(c)
            else:
                out.extend(f"\\x{b:02x}" for b in c.encode("utf-8"))
    return "".join(out)


def _rx_escape(text: str, *, relaxed: bool) -> str:
    """Escape literal text for the `regex` package; relaxed turns whitespace into \\s+."""
    if not relaxed:
        return regex.escape(text, special_only=True)
    parts = re.split(r"\s+", text)
    return r"\s+".join(regex.escape(p, special_only=True) for p in parts)


@dataclass
class Analysis:
    """Everything derived from one pattern string."""

    pattern: str
    ok: bool
    reason: str | None
    pieces: list[Piece] | None  # None -> opaque regex
    literal_chars: int
    generic: bool
    newlines: int  # literal newlines in the pattern (confirm windows span this many lines)

    @property
    def template(self) -> bool:
        return self.pieces is not None

    @cached_property
    def literal_total(self) -> int:
        return self.literal_chars

    def scan_form(self) -> str:
        """What Hyperscan scans for (ids only; see module docstring)."""
        if self.pieces is None:
            return self.pattern
        lits = [p for p in self.pieces if p.text is not None]
        parts: list[str] = []
        for idx, p in enumerate(self.pieces):
            if p.text is None:
                if 0 < idx < len(self.pieces) - 1:
                    parts.append(".*")
            else:
                parts.append(_hs_escape(p.text, relaxed=True))
        if not lits:
            return self.pattern
        form = "".join(parts)
        while form.startswith((".*", r"\s+")):
            form = form[2 if form.startswith(".*") else 3 :]
        while form.endswith((".*", r"\s+")):
            form = form[: -2 if form.endswith(".*") else -3]
        return form

    def head_form(self) -> str | None:
        """A plain literal from the start of a long pattern, to catch truncated pastes.

        The longest literal piece before the last one (or the first HEAD_LITERAL_CHARS of
        a pattern without placeholders): a pure literal costs Hyperscan almost nothing.
        """
        if self.pieces is None or self.literal_chars < HEAD_LITERAL_CHARS + HEAD_MIN_EXTRA:
            return None
        lits = [p.text for p in self.pieces if p.text is not None]
        for lit in lits[:-1]:  # the earliest long piece survives truncation best
            if len(lit.strip()) >= 20:
                return _hs_escape(lit.strip(), relaxed=False)
        for lit in (lits[0], lits[-1]):
            lit = lit.strip()
            if len(lit) >= HEAD_LITERAL_CHARS + HEAD_MIN_EXTRA:
                return _hs_escape(lit[:HEAD_LITERAL_CHARS].rstrip(), relaxed=False)
        return None

    @cached_property
    def fine_pieces(self) -> list[Piece]:
        """The pieces with literal runs split into words (for prefix matching)."""
        assert self.pieces is not None
        out: list[Piece] = []
        for p in self.pieces:
            if p.text is None:
                out.append(p)
            else:
                out.extend(Piece(w) for w in re.findall(r"\s*\S+|\s+", p.text))
        return out

    def _grouped(self, *, relaxed: bool, nested: bool = False) -> str:
        """One group per piece. nested: pieces are words and every piece after the first
        literal word is optional, so the longest matching prefix of the pattern is found
        (group layout then follows `fine_pieces`)."""
        assert self.pieces is not None
        pieces = self.fine_pieces if nested else self.pieces
        out: list[str] = []
        last = len(pieces) - 1
        opened = 0
        seen_literal = False
        for idx, p in enumerate(pieces):
            after_placeholder = idx > 0 and pieces[idx - 1].text is None
            if nested and seen_literal and not (p.text is not None and after_placeholder):
                out.append("(?:")  # a placeholder and the word after it are one unit
                opened += 1
            if p.text is None:
                if relaxed:
                    out.append("(.*)" if idx == last else "(.*?)")
                else:
                    out.append("(.+)" if idx == last else "(.+?)")
            else:
                out.append("(" + _rx_escape(p.text, relaxed=relaxed) + ")")
                seen_literal = True
        out.append(")?" * opened)
        return "".join(out)

    @cached_property
    def strict_rx(self) -> regex.Pattern[str]:
        if self.pieces is None:
            return regex.compile(self.pattern, regex.VERSION0)
        return regex.compile(self._grouped(relaxed=False), regex.VERSION0)

    @cached_property
    def relaxed_rx(self) -> regex.Pattern[str] | None:
        """Case-insensitive, any whitespace for whitespace, empty placeholders allowed."""
        if self.pieces is None:
            return None
        return regex.compile(self._grouped(relaxed=True), regex.VERSION0 | regex.IGNORECASE)

    @cached_property
    def prefix_rx(self) -> regex.Pattern[str] | None:
        """Relaxed, and matches the longest prefix of the pattern that the text has."""
        if self.pieces is None:
            return None
        return regex.compile(
            self._grouped(relaxed=True, nested=True), regex.VERSION0 | regex.IGNORECASE
        )


def analyse(pattern: str) -> Analysis:
    """Parse a pattern and decide whether it is admissible (engines are tried later)."""

    def refused(reason: str, literal: int = 0) -> Analysis:
        return Analysis(pattern, False, reason, None, literal, True, 0)

    if not pattern:
        return refused("empty pattern")
    pieces = parse_template(pattern)
    if pieces is not None:  # the common case: cheap, no regex parser needed
        literal = sum(len(p.text) for p in pieces if p.text is not None)
        if not any(p.text.strip() for p in pieces if p.text is not None):
            return refused("matches the empty string (placeholders and whitespace only)")
        words = sum(len(_WORD.findall(p.text)) for p in pieces if p.text is not None)
    else:
        try:
            tree = sre_parse.parse(pattern)
        except (re.error, OverflowError, RecursionError) as exc:
            return refused(f"does not compile as a Python regex: {exc}")
        problem = _sre_problems(tree)
        if problem:
            return refused(problem)
        try:
            empty = regex.search(pattern, "", timeout=0.05) is not None
        except (regex.error, TimeoutError) as exc:
            return refused(f"cannot be checked: {exc}")
        if empty:
            return refused("matches the empty string (it would match every paste)")
        literal = _sre_literal_chars(tree)
        words = len(_WORD.findall(pattern))
    generic = literal < GENERIC_LITERAL_CHARS or (words < 2 and literal < GENERIC_SINGLE_WORD_CHARS)
    return Analysis(pattern, True, None, pieces, literal, generic, pattern.count("\n"))


def literal_matched(
    analysis: Analysis, m: regex.Match[str], *, fine: bool = False
) -> tuple[int, list[str]]:
    """Literal characters of a template pattern matched exactly, and the captures.

    Case differences, whitespace differences and fuzzy edits do not count as matched
    characters; pieces a prefix match did not reach count nothing; a literal piece that a
    partial match (text ends) only began counts the characters it reached.
    """
    assert analysis.pieces is not None
    exact = 0
    captures: list[str] = []
    prev_end = m.start()
    pieces = analysis.fine_pieces if fine else analysis.pieces
    for gi, p in enumerate(pieces, start=1):
        got = m.group(gi)
        if got is None:
            if p.text is not None and m.partial and prev_end < m.end():
                tail = m.string[prev_end : m.end()]
                exact += sum(1 for a, b in zip(p.text, tail, strict=False) if a == b)
            break
        prev_end = m.end(gi)
        if p.text is None:
            captures.append(got)
            continue
        if got == p.text:
            exact += len(p.text)
            continue
        want_words = p.text.split()
        got_words = got.split()
        if len(want_words) != len(got_words):  # fuzzy edits moved word boundaries
            exact += sum(1 for a, b in zip(p.text, got, strict=False) if a == b)
            continue
        exact += len(p.text) - sum(len(w) for w in want_words)  # whitespace counts once
        for a, b in zip(want_words, got_words, strict=False):
            exact += sum(1 for x, y in zip(a, b, strict=False) if x == y)
    fuzzy = getattr(m, "fuzzy_counts", (0, 0, 0))
    return max(0, exact - sum(fuzzy)), captures


FUZZY_MIN_PIECE = 8  # shorter literal pieces are not aligned fuzzily (too noisy)
FUZZY_MIN_SCORE = 85.0


def fuzzy_literal(analysis: Analysis, text: str) -> tuple[int, int, int]:
    """Align the pattern's literal pieces, in order, to `text` allowing small edits.

    Returns (literal characters matched, start, end) where a piece aligned with
    similarity s counts len(piece) * s characters and unaligned pieces count nothing.
    Used only for near-miss candidates (rapidfuzz, bit-parallel: microseconds a piece).
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
    first = next((k for k, p in enumerate(fine) if p.text is not None and p.text.strip()), None)
    if first is None:
        return None
    head = fine[first].text.strip().lower()  # type: ignore[union-attr]
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
        exact += (
            len(piece)
            - len(word)
            + sum(1 for a, b in zip(word, text[j : j + len(word)], strict=False) if a == b)
        )
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
