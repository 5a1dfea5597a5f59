"""Ranking: which confirmed hit is *the* error of the paste, and why.

Confirmed hits arrive as `Candidate`s. This module decides which are confident matches
and which are only suggestions and orders them (the line of reason each match shows is
written by `report`, from the flags set here). The rules are properties of the
pattern and of the match, never words or record ids:

* the score is the number of the pattern's literal characters actually matched (exactly:
  case and whitespace differences and truncation cost characters), so the most specific
  record wins, not the longest regex;
* a generic pattern (few required literal characters) is never confident;
* a relaxed match must still match most of its literal text; a truncated one must reach
  the end of its line with a substantial prefix;
* a match whose text another match reads further (same literal characters, and on past
  its end) ranks below it: the other accounts for more of the line (`overreads`);
* of two equally specific readings, a record's current wording goes before an older
  wording (an alias) of the same text;
* ties between equally specific records go to the one on an error-looking line
  (an exception/level marker at the start), then to the later line (the last exception of
  a Python traceback is the one raised).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .lineclass import MAX_CHARS, is_errorish, is_infoish
from .normalise import strip_prefix
from .patterns import GENERIC_LITERAL_CHARS

KIND_FACTOR = {"exact": 1.0, "relaxed": 0.9, "truncated": 0.85, "diverged": 0.8, "fuzzy": 0.8}
MIN_COVERAGE = {"exact": 1.0, "relaxed": 0.85, "truncated": 0.5, "diverged": 0.55, "fuzzy": 0.9}
MIN_PARTIAL_CHARS = 30  # truncated / diverged matches need this many literal chars
MIN_FUZZY_CHARS = 40  # an approximate match must be long to be told from a rewording
PLACEHOLDER_RATIO = 3  # values may be at most this many times the literal text ...
PLACEHOLDER_RATIO_BELOW = 24  # ... for patterns with fewer literal characters than this


@dataclass(slots=True)
class Candidate:
    pid: int
    kind: str  # exact | relaxed | truncated
    line: int  # orders lines: the offset of the line start in the normalised text
    start: int  # normalised str offsets of the match
    end: int
    line_start: int  # normalised offset of the line start
    line_text: str
    captures: list[str]
    literal_exact: int
    literal_total: int
    generic: bool
    tail_start: int = -1  # start of a trailing placeholder's capture, -1 if none
    wrapper: bool = False  # set by `rank`: another match sits inside the trailing capture
    lead: bool = False  # the pattern starts with a placeholder (its capture runs to line start)
    literals: tuple[tuple[int, int], ...] = ()  # spans read as literal text (exact matches)
    overread: bool = False  # set by `rank`: another match reads this one's text further
    code: bool = False  # read only on a line of source code a traceback quotes
    quoted: bool = False  # ... and taken as the error all the same (`evidence.quoted_raises`)
    alias: bool = False  # the pattern is only an older wording of its records (an alias)
    # `line_signal`, read once: ranking and the report each sort by it
    _signal: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def coverage(self) -> float:
        return self.literal_exact / self.literal_total if self.literal_total else 0.0

    @property
    def score(self) -> float:
        return round(self.literal_exact * KIND_FACTOR[self.kind], 2)

    def line_signal(self) -> int:
        """1 when the text before the match announces an error, -1 for INFO/DEBUG, else 0."""
        if self._signal is None:
            head = self.line_text[: max(0, self.start - self.line_start)][-MAX_CHARS:]
            self._signal = 1 if is_errorish(head) else -1 if is_infoish(head) else 0
        return self._signal


def confident(c: Candidate) -> tuple[bool, str]:
    """Whether the candidate is a confident match, and if not, why."""
    if c.code:
        return False, (
            "matched only in a line of source code the traceback quotes: evidence of "
            "where an error is raised, not the message printed"
        )
    if c.generic:
        return False, (
            f"the pattern is generic: only {c.literal_total} literal characters "
            "(too unspecific to identify an error on its own)"
        )
    if c.literal_exact < GENERIC_LITERAL_CHARS:
        return False, f"only {c.literal_exact} literal characters matched exactly"
    if c.coverage < MIN_COVERAGE[c.kind]:
        what = {
            "relaxed": "with case/spacing differences",
            "truncated": "up to where the text stops",
            "diverged": "up to where the text departs from it",
            "fuzzy": "approximately",
        }.get(c.kind, c.kind)
        return False, (
            f"matched {what}: {c.literal_exact} of {c.literal_total} literal characters "
            f"({c.coverage:.0%})"
        )
    if c.kind in ("truncated", "diverged") and c.literal_exact < MIN_PARTIAL_CHARS:
        return False, f"only the first {c.literal_exact} literal characters matched"
    if c.kind == "fuzzy" and c.literal_exact < MIN_FUZZY_CHARS:
        return False, f"approximate match of a short message ({c.literal_exact} characters)"
    values = _values(c)
    if c.literal_exact < PLACEHOLDER_RATIO_BELOW and values > PLACEHOLDER_RATIO * c.literal_exact:
        return False, (
            f"mostly placeholder text: {c.literal_exact} literal characters around "
            f"{values} characters of values"
        )
    return True, ""


def _values(c: Candidate) -> int:
    """Characters the match's placeholders captured from the message itself.

    A leading placeholder's capture runs back to the line start whatever the message is
    (search semantics), so it says nothing about how placeholder-heavy the match is. Nor
    does the log prefix (timestamp, level, logger) in any later capture: when the first
    literal of such a pattern also occurs in the prefix (the ``.`` of ``{app}.{model} has
    no field``, met in a timestamp's ``hh:mm:ss.ff``), the search reads it there and the
    next capture holds the rest of the prefix. An exact match knows where its literals were read, so
    its captures are counted from where the message body starts.
    """
    if not (c.lead and c.literals):
        return sum(len(v) for v in (c.captures[1:] if c.lead else c.captures))
    body = c.line_start + strip_prefix(c.line_text)
    ends = [e for _s, e in c.literals]
    starts = [s for s, _e in c.literals[1:]] + [c.end]
    return sum(max(0, b - max(a, body)) for a, b in zip(ends, starts, strict=True))


def rank(cands: list[Candidate]) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """Split into confident (best first) and unconfident (with reasons) candidates."""
    sure: list[Candidate] = []
    unsure: list[tuple[Candidate, str]] = []
    for c in cands:
        ok, why = confident(c)
        if ok:
            sure.append(c)
        else:
            unsure.append((c, why))
    # A match whose trailing placeholder holds another confident match is a wrapper
    # ("Catalog error: {}"): the wrapped message is the more specific answer.
    by_line: dict[int, list[Candidate]] = {}
    for c in sure:
        by_line.setdefault(c.line, []).append(c)
    for a in sure:
        if a.tail_start < 0:
            continue
        for b in by_line[a.line]:  # a trailing capture does not leave its line
            if b is not a and b.start >= a.tail_start and b.end <= a.end:
                a.wrapper = True
                break
    for a in sure:
        for b in by_line[a.line]:
            if b is not a and overreads(b, a):
                a.overread = True
                break
    sure.sort(key=order_key)
    unsure.sort(key=lambda cw: order_key(cw[0]))
    return sure, unsure


INFO_FACTOR = 0.9  # records are error sites: a match on an INFO/DEBUG line ranks lower


def overreads(b: Candidate, a: Candidate) -> bool:
    """Does match ``b`` read the text of match ``a`` further, so ``a`` is a partial reading?

    ``b`` goes on past ``a``'s end, accounting for text that ``a`` leaves unexplained, and
    either both read the same characters as literal text (``a``'s last literal character
    lies inside one of ``b``'s literal runs) or ``a`` lies inside ``b``'s *leading*
    placeholder, which by search semantics runs back to the line start and so says nothing
    about message boundaries: ``a`` is then the subject of ``b``'s message. ("table {} not
    found" and "table or source" on "... table or source not found: t3", both read fully
    by "{object_type} not found: {name}".) A message inside ``b``'s *trailing*
    placeholder is the wrapper rule's case (the inner message wins); one inside a middle
    placeholder is left to the score.
    """
    if not b.literals or b.end <= a.end or b.start > a.start:
        return False
    if b.lead and a.end <= b.literals[0][0]:
        return True  # inside b's leading placeholder: b's subject, b goes on past it
    if not a.literals:
        return False
    last = a.literals[-1][1] - 1
    return any(s <= last < e for s, e in b.literals)


def order_key(c: Candidate) -> tuple[bool, bool, float, bool, int, int]:
    signal = c.line_signal()
    return (
        c.wrapper,
        c.overread,
        -c.score * (INFO_FACTOR if signal < 0 else 1.0),
        c.alias,
        -signal,
        -c.line,
    )
