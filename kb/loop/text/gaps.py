"""Gaps: reports of the same unknown error, with different values, folded into one.

Why: curators act on "this error, reported 40 times since March", not on 40 reports. Two
reports are the same error when their headline error lines differ only in values (ids,
numbers, names in quotes, paths, addresses, the placeholders redaction wrote). So a
report's fingerprint is its headline's *template* (`template_of`: the message with its
variables masked as ``<*>``), and `GapIndex` puts a report into the gap whose template is
similar enough, or opens a new gap.

Which similarity: chosen by measurement on the public labelled pastes, where pastes of the
same record must fold together and pastes of different records must not
(benchmarks/bench_gaps.py; pairwise precision, recall and F1 of each method in
benchmarks/results/gaps.json). Three methods are implemented so the choice can be re-run:
``exact`` (same template key), ``fuzzy`` (rapidfuzz on templates, blocked by shared rare
words so a report is compared with a bounded number of gaps, not all of them) and
``drain`` (the prefix-tree template miner of He et al., written here in `_drain.py`
because the drain3 package pins old dependencies). ``fuzzy`` with the guarded token-set
scorer wins: people paste the same error behind different heads (a logger name, a
wrapping exception, "serialization error: "), which breaks ``exact`` keys and Drain's
routing by token count and first token, while a token-set comparison ignores the extra
words -- guarded, because a token set contained in a much longer one would otherwise
score as identical. The threshold is the best F1 among those keeping precision high: a
wrong fold hides an error from curators, a missed fold only shows it twice.

A gap keeps its template, count, first and last seen, and at most `MAX_SAMPLES` redacted
sample lines (the first ones, then the latest, so a curator sees how it started and how
it looks now). Finding the nearest existing records is the matcher's similarity index's
job (`kb.engine.similar`), done by the caller with the gap's template.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from ._drain import DrainTree
from .error_lines import ErrorLine

__all__ = [
    "DEFAULT_METHOD",
    "DEFAULT_SCORER",
    "DEFAULT_THRESHOLD",
    "METHODS",
    "SCORERS",
    "VAR",
    "Gap",
    "GapIndex",
    "headline",
    "key_of",
    "template_of",
    "words_of",
]

VAR = "<*>"
METHODS = ("exact", "fuzzy", "drain")
DEFAULT_METHOD = "fuzzy"
DEFAULT_SCORER = "token_set_guarded"
# The similarity in [0, 1] at or above which a report joins a gap (see "Which similarity").
DEFAULT_THRESHOLD = 0.7
MAX_SAMPLES = 5
MAX_TEMPLATE_CHARS = 300
_KEY_TOKENS = 12  # an exact key is the first words: pastes cut long messages short
_BLOCK_WORDS = 3  # fuzzy: rarest literal words whose gaps are compared
_BLOCK_CAP = 200  # fuzzy: most gaps compared per report

_SPACES = re.compile(r"\s+")


def _quoted(m: re.Match[str]) -> str:
    """A quoted value is masked; a quoted sentence (a validation message) is wording."""
    s = m[0]
    return s if s.count(" ") >= 4 else s[0] + VAR + s[-1]


def _hex(m: re.Match[str]) -> str:
    """Hex ids ("684f2e4032b4dcc2", "0x7f0c"), not hex-looking words ("deadface")."""
    s = m[0]
    return VAR if s.startswith("0x") or any(c.isdigit() for c in s) else s


# (what it masks, the regex, its replacement), applied in this order by `template_of`;
# every regex is one bounded pass (linear on any line).
_MASKS: tuple[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    ("reprs: <User at 0x7f..>, <class 'x'>, <email>", re.compile(r"<[^<>\n]{0,200}>"), VAR),
    ("nested reprs: <AdaptedConnection <...>>", re.compile(r"<[^<>\n]{0,200}>"), VAR),
    (
        "quoted values",
        re.compile(
            r"(?<![\w\\])(?:'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"
            "|\u201c[^\u201d\n]{0,200}\u201d|\u2018[^\u2019\n]{0,200}\u2019)(?!\\w)"
        ),
        _quoted,
    ),
    (
        "URLs and paths",
        re.compile(
            r"(?<![\w/\\])(?:[A-Za-z][\w+.-]{0,20}://|\.{0,2}/|[A-Za-z]:\\|~/)"
            r"[^\s'\"`<>()\[\],;]{0,400}"
            r"|(?<![\w/])[\w.-]{1,100}/[\w.-]{1,100}/[^\s'\"`<>()\[\],;]{0,400}"
        ),
        VAR,
    ),
    (
        "UUIDs",
        re.compile(r"(?<![\w-])[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}(?![\w-])"),
        VAR,
    ),
    ("hex ids", re.compile(r"(?<![\w.])(?:0x[0-9a-fA-F]{1,64}|[0-9a-f]{8,64})(?!\w)"), _hex),
    ("SQLAlchemy's link trailer", re.compile(r"\(Background on this error at: <\*>\)"), ""),
    (
        "dotted names of things: User.addresses, parent.id (values, not wording)",
        re.compile(r"(?<![\w.])[A-Za-z_][\w$]{0,80}(?:\.[A-Za-z_][\w$]{0,80}){1,10}(?![\w(])"),
        VAR,
    ),
    (
        "constants: INSTALLED_APPS",
        re.compile(r"(?<![\w.])[A-Z][A-Z0-9]{1,40}(?:_[A-Z0-9]{1,40}){1,10}(?![\w.])"),
        VAR,
    ),
    ("numbers", re.compile(r"(?<![\w.])[-+]?\d[\d.,_:]{0,40}(?<![.,:])"), VAR),
    ("runs of variables", re.compile(r"<\*>(?:[\s,:;=]{0,4}<\*>){1,50}"), VAR),
)
# A head that names the error's class or kind rather than saying what went wrong; stripped
# (when enough message is left) so "sqlalchemy.exc.TimeoutError: X", "TimeoutError: X" and
# a bare "X" fold together.
_HEAD = re.compile(
    r"(?:(?:[-|][ \t]*)?(?:[\w.]{1,80}[ \t]+[-|][ \t]+)?"
    r"(?:ERROR|WARNING|WARN|CRITICAL|FATAL)[ \t]*[-|][ \t]*"
    r"|Caused by:[ \t]*|Exception in thread \"[^\"\n]{0,100}\"[ \t]+"
    r"|(?:error|Error|ERROR|panic|fatal|FATAL|Exception)(?: \[\w{1,20}\])?:[ \t]+"
    r"|(?:[A-Za-z_$][\w$]{0,80}\.){1,10}[A-Z][\w$]{0,80}:[ \t]+"
    r"|[A-Z][a-z0-9]{1,30}(?:[A-Z][a-z0-9]{0,30}){1,8}:[ \t]+"
    r"|\((?:[A-Za-z_$][\w$]{0,80}\.){1,10}[A-Za-z_$][\w$]{0,80}\)[ \t]*)"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,}")


def template_of(line: str) -> str:
    """``line`` with its class/kind head removed and its variables masked as ``<*>``."""
    t = _SPACES.sub(" ", line[:2000]).strip()
    for _ in range(4):
        m = _HEAD.match(t)
        if m is None or len(_WORD.findall(t, m.end())) < 3:
            break
        t = t[m.end() :]
    for _what, pattern, replacement in _MASKS:
        t = pattern.sub(replacement, t)
    return _SPACES.sub(" ", t).strip()[:MAX_TEMPLATE_CHARS]


def key_of(template: str) -> str:
    """What ``exact`` compares: the first words, case-folded."""
    return " ".join(template.lower().split()[:_KEY_TOKENS])


def _headline_rank(line: ErrorLine) -> int:
    if line.kind == "exception":
        return 0 if line.exc_type else 1  # "a.b.FooError: msg" before its continuation lines
    return {"caused_by": 2, "log": 3}.get(line.kind, 4)


def headline(lines: Sequence[ErrorLine]) -> ErrorLine | None:
    """The line a report is filed under: the error itself (the exception that escaped, a
    panic) before its causes, before error-level log lines, before prose. Among equals
    the first, except for exceptions: the last of a chained traceback is the one that
    escaped."""
    best: ErrorLine | None = None
    best_rank = 99
    for line in lines:
        rank = _headline_rank(line)
        if rank < best_rank or (rank == best_rank == 0):
            best, best_rank = line, rank
    return best


@dataclass
class Gap:
    """One unknown error as reported: its template, how often, when, a few samples."""

    id: int
    template: str
    count: int = 0
    first_seen: float | None = None
    last_seen: float | None = None
    samples: list[str] = field(default_factory=list)

    def add(self, sample: str | None, seen_at: float | None) -> None:
        self.count += 1
        if seen_at is not None:
            if self.first_seen is None or seen_at < self.first_seen:
                self.first_seen = seen_at
            if self.last_seen is None or seen_at > self.last_seen:
                self.last_seen = seen_at
        if sample is not None and sample not in self.samples:
            if len(self.samples) >= MAX_SAMPLES:
                self.samples.pop()  # keep the first ones; the last slot follows the latest
            self.samples.append(sample)


class GapIndex:
    """Gaps in memory, with the folding rule. The Django side rebuilds one from stored
    gaps (`load`) or asks it for the gap a new report belongs to (`find`), then stores."""

    def __init__(
        self,
        method: str = DEFAULT_METHOD,
        threshold: float | None = None,
        scorer: str = DEFAULT_SCORER,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown gap method {method!r}; one of {METHODS}")
        self.method = method
        self.scorer = SCORERS[scorer]
        self.threshold = DEFAULT_THRESHOLD if threshold is None else threshold
        self.gaps: list[Gap] = []
        self._by_key: dict[str, int] = {}
        self._postings: dict[str, list[int]] = defaultdict(list)
        self._drain = DrainTree(self.threshold) if method == "drain" else None

    def __len__(self) -> int:
        return len(self.gaps)

    def load(self, gaps: Iterable[Gap]) -> None:
        for gap in gaps:
            self._insert(gap)

    def find(self, template: str) -> Gap | None:
        """The existing gap this template folds into, or None."""
        if self.method == "exact":
            i = self._by_key.get(key_of(template))
        elif self.method == "fuzzy":
            i = self._nearest(template)
        else:
            assert self._drain is not None
            i = self._drain.match(template)
        return None if i is None else self.gaps[i]

    def add(self, template: str, sample: str | None = None, seen_at: float | None = None) -> Gap:
        """File one report: into its gap, or into a new one."""
        gap = self.find(template)
        if gap is None:
            gap = Gap(len(self.gaps), template)
            self._insert(gap)
        elif self._drain is not None:
            gap.template = self._drain.merge(gap.id, template)
        gap.add(sample, seen_at)
        return gap

    def _insert(self, gap: Gap) -> None:
        gap.id = len(self.gaps)
        self.gaps.append(gap)
        self._by_key.setdefault(key_of(gap.template), gap.id)
        for word in set(words_of(gap.template)):
            self._postings[word].append(gap.id)
        if self._drain is not None:
            self._drain.insert(gap.id, gap.template)

    def candidates(self, template: str) -> int:
        """How many gaps ``fuzzy`` compares this template with (bounded by blocking)."""
        return len(self._candidates(template))

    def _candidates(self, template: str) -> set[int]:
        """Gaps sharing one of the template's rarest words (the latest ones of each)."""
        known = [w for w in set(words_of(template)) if w in self._postings]
        words = sorted(known, key=lambda w: len(self._postings[w]))
        out: set[int] = set()
        for word in words[:_BLOCK_WORDS]:
            out.update(self._postings.get(word, ())[-_BLOCK_CAP:])
        return out

    def _nearest(self, template: str) -> int | None:
        best, best_score = None, self.threshold * 100
        for i in self._candidates(template):
            score = self.scorer(template.lower(), self.gaps[i].template.lower())
            if score >= best_score:
                best, best_score = i, score
        return best


def _prefix_tolerant(a: str, b: str) -> float:
    """ratio, or the partial ratio when the shorter is most of the longer (one paste
    carries a logger prefix or cut the message short; a short line inside a long one
    is not enough)."""
    score = fuzz.ratio(a, b)
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) >= 0.6 * len(long_):
        score = max(score, fuzz.partial_ratio(short, long_))
    return score


def _token_set_guarded(a: str, b: str) -> float:
    """token_set_ratio, which scores 100 whenever one word set contains the other, only
    between templates of comparable length; ratio otherwise."""
    na, nb = a.count(" ") + 1, b.count(" ") + 1
    if min(na, nb) < 0.5 * max(na, nb):
        return fuzz.ratio(a, b)
    return fuzz.token_set_ratio(a, b)


#: Scorers ``fuzzy`` can use, all on case-folded templates, 0..100.
SCORERS: dict[str, Callable[[str, str], float]] = {
    "ratio": fuzz.ratio,
    "prefix_tolerant": _prefix_tolerant,
    "token_set_ratio": fuzz.token_set_ratio,
    "token_set_guarded": _token_set_guarded,
    "token_sort_ratio": fuzz.token_sort_ratio,
    "partial_ratio": fuzz.partial_ratio,
}


def words_of(template: str) -> list[str]:
    """The literal words the fuzzy fold blocks on (stored as `GapWord` postings)."""
    return [w.lower() for w in _WORD.findall(template)]
