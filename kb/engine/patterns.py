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
import re._constants as sre_constants  # the stdlib parser: the one `re` itself reads
import re._parser as sre_parse
from dataclasses import dataclass
from functools import cached_property

import regex

PLACEHOLDER = "(.+?)"
MAX_REPEAT = 1000  # larger counted repeats are refused (compile blow-up)
GENERIC_LITERAL_CHARS = 12  # fewer required literal characters -> generic
GENERIC_SINGLE_WORD_CHARS = 16  # one word and fewer literal characters -> generic
HEAD_LITERAL_CHARS = 28  # literal characters in a truncation head
HEAD_MIN_EXTRA = 10  # a head only when the pattern has this many literal chars beyond it
# A shorter line literal (`Analysis.line_literal`) would pick too many lines of a log: its
# pattern's lines are found by its scan form instead.
LINE_LITERAL_BYTES = 5
_SINGLE_SPACED = re.compile(r"[^\s\x00]+(?: [^\s\x00]+)*")  # no NUL: a stored separator
_META = set(".^$*+?{}[]|()")
_WORD = re.compile(r"[^\W_]{2,}")
_HEX_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")


@dataclass(frozen=True, slots=True)
class Piece:
    """A literal run (text) or a placeholder (text is None)."""

    text: str | None


# Template tokens. ``lit``: a run of plain characters and escaped non-word characters
# (``\.``, ``\(``: ``[^\w]`` is exactly "neither ``isalnum()`` nor ``_``"), consumed at
# C speed; ``ph``: a placeholder; ``nl``/``tab``: ``\n``/``\t``; ``u``/``x``: ``\u00e9``,
# ``\x41``. Anything else (another metacharacter, ``\d``, a backreference, a trailing
# backslash) starts no token: the pattern is then an opaque regex.
_TEMPLATE_TOKEN = re.compile(
    r"(?P<lit>(?:[^\\.^$*+?{}\[\]|()]|\\[^\w])+)"
    r"|(?P<ph>\(\.\+\?\))"
    r"|(?P<nl>\\n)"
    r"|(?P<tab>\\t)"
    r"|\\u(?P<u>[0-9a-fA-F]{4})|\\x(?P<x>[0-9a-fA-F]{2})"
)
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)


def parse_template(pattern: str) -> list[Piece] | None:
    """Split a template-style pattern into literal runs and `(.+?)` placeholders.

    Returns None when the pattern uses any other regex syntax (it is then treated as an
    opaque regex: no relaxation, confirm exactly as written). Adjacent placeholders count
    as one; escapes (``\\.``, ``\\n``, ``\\u00e9``) become the characters they stand for.
    """
    pieces: list[Piece] = []
    buf: list[str] = []
    match = _TEMPLATE_TOKEN.match
    pos, n = 0, len(pattern)
    while pos < n:
        token = match(pattern, pos)
        if token is None:
            return None
        pos = token.end()
        kind = token.lastgroup
        assert kind is not None  # every alternative of a token is a named group
        if kind == "lit":
            text = token.group()
            buf.append(_UNESCAPE.sub(r"\1", text) if "\\" in text else text)
        elif kind == "ph":
            if buf:
                pieces.append(Piece("".join(buf)))
                buf = []
            if not pieces or pieces[-1].text is not None:
                pieces.append(Piece(None))
        elif kind == "nl":
            buf.append("\n")
        elif kind == "tab":
            buf.append("\t")
        else:  # "u" or "x"
            buf.append(chr(int(token.group(kind), 16)))
    if buf:
        pieces.append(Piece("".join(buf)))
    return pieces


_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


def _sre_literal_chars(tree: sre_parse.SubPattern) -> int:
    """Minimum number of literal characters any match of the parsed regex contains."""
    total = 0
    for op, av in tree:
        if op is sre_constants.LITERAL:
            total += 1
        elif op is sre_constants.SUBPATTERN:
            total += _sre_literal_chars(av[-1])
        elif op in _REPEATS:
            lo, _hi, sub = av
            total += min(lo, MAX_REPEAT) * _sre_literal_chars(sub)
        elif op is sre_constants.BRANCH:
            total += min((_sre_literal_chars(b) for b in av[1]), default=0)
        elif op is sre_constants.ATOMIC_GROUP:
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
        elif op in _REPEATS:
            lo, hi, sub = av
            if (hi is not sre_constants.MAXREPEAT and hi > MAX_REPEAT) or lo > MAX_REPEAT:
                return f"counted repeat above {MAX_REPEAT} ({{{lo},{hi}}}) is refused"
            subs = [sub]
        elif op is sre_constants.BRANCH:
            subs = list(av[1])
        elif op is sre_constants.ATOMIC_GROUP:
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
    space: turning every space into a class multiplies Hyperscan's compile time.
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


def literal_form(text: str) -> str:
    """A Hyperscan expression (byte mode) matching exactly the UTF-8 of ``text``."""
    return _hs_escape(text, relaxed=False)


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
        head = self._head_text()
        return None if head is None else literal_form(head)

    def _head_text(self) -> str | None:
        if self.pieces is None or self.literal_chars < HEAD_LITERAL_CHARS + HEAD_MIN_EXTRA:
            return None
        lits = [p.text for p in self.pieces if p.text is not None]
        for lit in lits[:-1]:  # the earliest long piece survives truncation best
            if len(lit.strip()) >= 20:
                return lit.strip()
        for lit in (lits[0], lits[-1]):
            lit = lit.strip()
            if len(lit) >= HEAD_LITERAL_CHARS + HEAD_MIN_EXTRA:
                return lit[:HEAD_LITERAL_CHARS].rstrip()
        return None

    def line_literal(self) -> bytes | None:
        """Bytes that every match of the scan form, and of the head, holds on the line the
        match ends on: what finds the lines of a whole log worth reading
        (`shards.lines_database`); None for an opaque or generic pattern, for one whose
        match may cross lines, or when none is `LINE_LITERAL_BYTES` long.

        The scan form keeps a run of words joined by single spaces verbatim (only longer
        whitespace relaxes, and with it a match may cross lines), and a head is verbatim,
        so the longest such run of the head (the head's piece is in every match too) or
        else of any piece is in every match. A line literal is a plain string: Hyperscan
        finds thousands of them at once far faster than it runs the scan forms, whose
        placeholders confirm every literal found (and the common words of a log are
        many)."""
        if self.pieces is None or self.generic or r"\s+" in self.scan_form():
            return None
        head = self._head_text()
        if head is not None and ("\n" in head or "\r" in head):
            return None
        texts = [head] if head is not None else [p.text for p in self.pieces if p.text]
        runs = [r.encode() for t in texts for r in _SINGLE_SPACED.findall(t)]
        best = max(runs, key=len, default=b"")
        return best if len(best) >= LINE_LITERAL_BYTES else None

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

    @cached_property
    def strict_rx(self) -> regex.Pattern[str]:
        """Opaque patterns are confirmed by the `regex` package (always with a timeout)."""
        return regex.compile(self.pattern, regex.VERSION0)


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
