"""Plain data types shared by the matcher core, the normaliser and the Django side.

They live in their own module so that callers (views, management commands, tests) can
import them without pulling in Hyperscan, and so that every result the matcher hands out
is an immutable, picklable value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .worddiff import WordDiff

Engine = Literal["hyperscan", "re2"]


@dataclass(frozen=True, slots=True)
class Wording:
    """An older wording of a record's message (an alias): the releases that printed it.

    Compiled beside the record's own pattern; a match on it answers with the record."""

    pattern: str  # made from ``message`` as a record's messagePattern is
    message: str = ""  # the template, in the errorMessage notation
    first_release: str = ""
    last_release: str = ""


@dataclass(frozen=True, slots=True)
class PatternSpec:
    """One record as the matcher sees it."""

    key: str  # the record id
    pattern: str  # the record's messagePattern (Python-`re` style; placeholders are (.+?))
    message: str = ""  # the record's errorMessage template
    aliases: tuple[Wording, ...] = ()  # older wordings still matched (oldest first)

    # When the record was made, in coarse steps (the holder's `AGE_STEP_S`): where the
    # step changes between two records, the shard layout may end a run (`shards.layout`),
    # so the records of a later import start shards of their own.
    batch: int = 0

    def alias_list(self) -> list[Wording]:
        """The aliases worth compiling: each pattern once, never the record's own."""
        seen = {self.pattern}
        out: list[Wording] = []
        for w in self.aliases:
            if w.pattern and w.pattern not in seen:
                seen.add(w.pattern)
                out.append(w)
        return out


@dataclass(frozen=True, slots=True)
class ReleaseFit:
    """The releases a paste's own text places it in, for one record: the line numbers of
    its frames in the record's file, or a version string naming the record's software."""

    ranges: tuple[tuple[str, str], ...]  # (first, last) runs of releases, oldest first
    how: str  # "line numbers" | "version"
    shown: str  # what in the paste says so ('query.py", line 2889', 'SQLAlchemy 1.3.24')

    @property
    def first(self) -> str:
        return self.ranges[-1][0]

    @property
    def last(self) -> str:
        return self.ranges[-1][1]


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether a pattern can be matched, by which engine, and how specific it is."""

    ok: bool
    engine: Engine | None
    reason: str | None
    generic: bool
    specificity: float  # literal characters every match must contain


@dataclass(frozen=True, slots=True)
class Match:
    """A confident match of one record's pattern in the pasted text."""

    key: str
    line: int  # 1-based line in the original text
    span: tuple[int, int]  # offsets in the original text
    text: str  # the matched text (from the original)
    captures: list[str]
    score: float
    literal_chars: int  # literal characters of the pattern matched exactly
    coverage: float  # literal_chars / literal characters of the whole pattern
    reason: str
    same_message: list[str] = field(default_factory=list)  # other keys with the same pattern
    kind: str = "exact"  # "exact" | "relaxed" (case/whitespace) | "truncated"
    evidence: tuple[str, ...] = ()  # what in the paste says this record raised it
    diff: WordDiff | None = None  # where the paste's words differ from the record's message
    wording: Wording | None = None  # the older wording matched; None: the current one
    fit: ReleaseFit | None = None  # the releases the paste's own text places it in

    @property
    def partial(self) -> bool:
        """The paste's text is not the record's message word for word."""
        return self.kind != "exact"


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A record that is plausibly meant but not matched confidently."""

    key: str
    similarity: float  # 0..1
    reason: str
    line: int | None = None
    diff: WordDiff | None = None  # the words reworded between the record and the paste


@dataclass(frozen=True, slots=True)
class Group:
    """Occurrences of one record's pattern over a whole log (lines where the scan hit)."""

    key: str
    count: int
    first_line: int
    last_line: int
    confident: bool
    order: int = 0  # 1-based place in the order of what to read first (`rootcause`)
    reason: str = ""  # why it is there: "root cause: innermost Caused by", ...
    cause: str | None = None  # key of the group this one is a consequence of


@dataclass(frozen=True, slots=True)
class Alternative:
    """Another record read on the same text as an answer's match, and why it lost."""

    key: str
    score: float
    why: str


@dataclass(frozen=True, slots=True)
class Answer:
    """One error of the paste: the best reading of one piece of text (a card and a
    summary row), the other records that read the same text, and where it is in the
    order to read the paste's errors."""

    match: Match
    alternatives: tuple[Alternative, ...] = ()
    count: int = 1  # occurrences in the paste (a multi-line message counted once)
    first_line: int = 0
    last_line: int = 0
    order: int = 0
    reason: str = ""
    cause: str | None = None  # key of the answer this one is a consequence of

    @property
    def key(self) -> str:
        return self.match.key


@dataclass(slots=True)
class MatchReport:
    """Everything `Matcher.match` found, best first."""

    matches: list[Match]
    suggestions: list[Suggestion]
    groups: list[Group]
    normalised: Any  # kb.engine.normalise.Normalised (or the identity fallback)
    elapsed_ms: float
    notes: list[str] = field(default_factory=list)  # e.g. "confirm budget exhausted"
    answers: list[Answer] = field(default_factory=list)  # one per error, in reading order


class PasteTooLarge(ValueError):
    """The pasted text is larger than the configured limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"The paste is {size:,} bytes; the limit is {limit:,} bytes. "
            "Paste the part around the error, or split the log."
        )
        self.size = size
        self.limit = limit
