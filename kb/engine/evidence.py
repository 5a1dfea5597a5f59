"""What the paste itself says about which software raised its errors.

A phrase such as ``must not be empty`` is in the source of several projects; the paste
around it usually says which one printed it: the file paths and module names of its
frames (``site-packages/django/``, ``org.apache.kafka.``, ``risingwave_stream::``,
``go.etcd.io/etcd``), the exception class printed beside the message
(``ImproperlyConfigured: ...``), and, strongest of all, a Python traceback quoting the
very line of source that raised it (``raise ImproperlyConfigured("The SECRET_KEY ...")``
under ``File ".../django/conf/__init__.py"``).

This module reads that context once per paste (`read_context`) and weighs each confident
candidate against the facts of its record (`RecordFacts`: repository, file, exception
class), handed in by the caller, who owns the records. It also marks the lines a
traceback quotes from source code: such a line is evidence of where an error was raised,
never the error's message (its values would be the source's placeholders, ``'%s'``).

Repositories are never named here: a record's repository counts as pointed at when the
last part of its name (``django`` of ``django/django``) is a component of a file path or
module name in the paste, so a new repository needs no code. No regex here can read the
same text two ways (paths are split apart, not matched), and each scan is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

from .rank import Candidate, confident, order_key

# The weight of each kind of evidence in the choice between readings of one text.
RAISING_LINE = 4  # the traceback quotes the record's own raising line
SAME_FILE = 2  # a frame (or module path) in the record's file
SAME_CLASS = 1  # the exception class printed beside the message is the record's
SAME_REPO = 1  # frames or module names point at the record's repository
OTHER_CLASS = -1  # a different exception class is printed beside the message
OTHER_REPO = -2  # the paste's frames point at other software, never at this repository
# The record's site left the code in a later release (a record learned from releases):
# on the same text, a record still in the code is the likelier answer, unless the removed
# one reads it clearly better (`report.CLEAR`) or the paste points at its releases.
REMOVED = -1

MAX_LOCATIONS = 2000  # paths and module names read from one paste
MAX_CODE_LINES = 5000  # quoted source lines marked in one paste
_CLASS_HEAD = 200  # characters before a match searched for the exception class

# `File "path", line N, in func` (Python tracebacks)
_PY_FRAME = re.compile(r'^([ \t]*)File "([^"\n]{1,400})", line (\d{1,7})', re.MULTILINE)
# Runs of the characters paths and module names are made of, split apart at C speed (no
# backtracking whatever the text); a run is a location when it holds `/`, `\\`, `::` or
# two dots (`ValueError:` and `3.14` are not).
_NOT_LOCATION = re.compile(r"[^\w$@+/\\.:-]+")
MAX_TOKEN = 400  # characters of a run read
AROUND_LINES = 60  # lines each side of a match searched for paths and module names
MAX_AROUND_CHARS = 200_000
_PYTEST_SOURCE = re.compile(r"^>[ \t]{2,}", re.MULTILINE)
_SPLIT = re.compile(r"[/\\.:$]+")
# `pkg.mod.ClassName` or `ClassName`, the whole of the word before the `: ` that ends the
# text before a message (Python, Java, Kotlin); the word starts after a space, `(` or `[`
_CLASS_WORD = re.compile(r"(?:[\w$]+\.)*([A-Z][\w$]*)")


@dataclass(frozen=True, slots=True)
class RecordFacts:
    """What the caller knows of a record that the paste can confirm or contradict."""

    repo: str = ""
    file_path: str = ""
    error_class: str = ""
    line_number: int | None = None
    removed_in: str = ""  # the first release without the site (records learned from releases)
    # Derived once, here: a caller keeps its facts for as long as its records do, and
    # every paste weighs each of them again.
    name: str = field(init=False)  # `repo_name` of ``repo``
    own_class: str = field(init=False)  # the last part of ``error_class``
    tail2: str = field(init=False)  # `_tail` of ``file_path``, its last two parts

    def __post_init__(self) -> None:
        own = self.error_class.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
        object.__setattr__(self, "name", repo_name(self.repo))
        object.__setattr__(self, "own_class", own)
        object.__setattr__(self, "tail2", _tail(self.file_path, 2) if self.file_path else "")


FactsOf = Callable[[Iterable[str]], Mapping[str, RecordFacts]]


@dataclass(frozen=True, slots=True)
class Frame:
    """A Python traceback frame and the source lines it quotes."""

    path: str
    line: int
    quoted: tuple[str, ...]  # the source lines it quotes


@dataclass(slots=True)
class Context:
    """The paste's own evidence, read once."""

    frames: list[Frame] = field(default_factory=list)
    code_lines: set[int] = field(default_factory=set)  # starts of quoted source lines
    # a last frame's quoted lines (the source that raised) -> start of the line after them
    raise_lines: dict[int, int] = field(default_factory=dict)
    components: set[str] = field(default_factory=set)  # lowercased path/module parts
    pairs: set[str] = field(default_factory=set)  # every two adjacent parts of a location
    _blocks: dict[int, set[str]] = field(default_factory=dict)
    _in_file: dict[str, list[Frame]] | None = None  # a file's last two parts -> its frames

    def frames_in(self, tail2: str) -> list[Frame]:
        """The frames in the file whose last two parts are ``tail2`` (`_tail`)."""
        if self._in_file is None:
            self._in_file = {}
            for fr in self.frames:
                self._in_file.setdefault(_tail(fr.path, 2), []).append(fr)
        return self._in_file.get(tail2, [])

    def read_locations(self, text: str, near: Iterable[int]) -> None:
        """The file paths and module names of the paste around the offsets ``near`` (a
        match's frames are printed beside it; a whole log is not read end to end)."""
        spans: Iterable[tuple[int, int]]
        if len(text) <= MAX_AROUND_CHARS:  # a paste: read it whole, once
            spans = [(0, len(text))]
        else:  # worked out as they are read: the budget ends the reading, not the matches
            spans = _around(text, sorted(set(near)))
        budget = MAX_AROUND_CHARS
        found = 0
        for start, end in spans:
            end = min(end, start + budget)
            budget -= end - start
            piece = text[start:end]
            toks: Collection[str] = _location_set(piece)  # each once
            if found + len(toks) >= MAX_LOCATIONS:  # the cap falls here: the first ones
                toks = dict.fromkeys(_locations(piece))
            taken = list(toks)[: MAX_LOCATIONS - found]
            self._add_locations([tok[:MAX_TOKEN] for tok in taken])
            found += len(taken)
            if budget <= 0 or found >= MAX_LOCATIONS:
                break
        self._add_locations([fr.path for fr in self.frames])

    def _add_locations(self, places: list[str]) -> None:
        """The parts of each location (`_parts_each`) and every two adjacent ones."""
        components, pairs = self.components, self.pairs
        for parts in _parts_each(places):
            if len(parts) >= 2:
                _add_heads(components, parts)
                pairs.update(map("/".join, pairwise(parts)))

    def block_components(self, text: str, line_start: int) -> set[str]:
        """Path and module parts of the error block around the line at ``line_start``:
        the line, the log line above it, the indented frames above it (a Python
        traceback) and the frames below it (a Java or Go stack trace). Only these say
        that the error on this line was raised by other software; a frame of another
        error further away in the same log says nothing about it."""
        got = self._blocks.get(line_start)
        if got is not None:
            return got
        start, end = _block(text, line_start)
        parts: set[str] = set()
        for found in _parts_each([tok[:MAX_TOKEN] for tok in _location_set(text[start:end])]):
            if len(found) >= 2:
                _add_heads(parts, found)
        self._blocks[line_start] = parts
        return parts


@dataclass(frozen=True, slots=True)
class Weighed:
    """A candidate's evidence: its weight and one phrase per piece, for "Why this match"."""

    weight: int = 0
    notes: tuple[str, ...] = ()
    raising_line: bool = False
    other_repo: bool = False


def _around(text: str, near: list[int]) -> Iterator[tuple[int, int]]:
    """The spans of ``AROUND_LINES`` lines each side of the offsets ``near`` (in order),
    overlapping ones merged, in order."""
    held: tuple[int, int] | None = None
    for at in near:
        start = end = at
        inside = held is not None and at <= held[1]  # its lines above are in the span
        for _ in range(0 if inside else AROUND_LINES):
            start = text.rfind("\n", 0, max(0, start - 1)) + 1
            if start <= 0:
                break
        for _ in range(AROUND_LINES):
            nl = text.find("\n", end + 1)
            if nl < 0:
                end = len(text)
                break
            end = nl
        if held is not None and (inside or start <= held[1]):
            held = (held[0], max(end, held[1]))
        else:
            if held is not None:
                yield held
            held = (start, end)
    if held is not None:
        yield held


def read_context(text: str) -> Context:
    """The traceback frames and quoted source lines (before confirming: which lines are
    code decides where a pattern is confirmed); paths and module names are read later,
    by `Context.read_locations`, only when there is a confident match to weigh."""
    ctx = Context()
    if 'File "' in text:
        _python_frames(text, ctx)
    if "\n>  " in text or text.startswith(">  "):
        _pytest_lines(text, ctx)
    return ctx


def _python_frames(text: str, ctx: Context) -> None:
    """Each traceback frame, and the lines under it that quote source (indented deeper
    than the ``File`` line; the ``^^^`` markers of Python 3.11 included)."""
    for m in _frame_lines(text):
        if len(ctx.code_lines) >= MAX_CODE_LINES:
            return
        indent = len(m.group(1))
        pos = text.find("\n", m.end())
        code: list[tuple[int, int]] = []
        while pos >= 0 and len(code) < 8:
            start = pos + 1
            nl = text.find("\n", start)
            end = len(text) if nl < 0 else nl
            line = text[start:end]
            body = line.lstrip(" \t")
            if not body or len(line) - len(body) <= indent or body.startswith('File "'):
                break
            code.append((start, end))
            ctx.code_lines.add(start)
            pos = nl
        quoted = tuple(text[s:e] for s, e in code)
        ctx.frames.append(Frame(m.group(2), int(m.group(3)), quoted))
        after = len(text) if pos < 0 else pos + 1
        if not text.startswith('File "', after + _indent_at(text, after)):
            for s_, _e in code:  # the last frame: its quoted line raised the error
                ctx.raise_lines[s_] = after


def _frame_lines(text: str) -> Iterator[re.Match[str]]:
    """`_PY_FRAME`'s matches, in order: its ``File "`` found by `str.find` (the regex is
    tried at the start of those lines only, not at every line of the paste)."""
    at = text.find('File "')
    while at >= 0:
        ls = text.rfind("\n", 0, at) + 1
        m = _PY_FRAME.match(text, ls) if not text[ls:at].strip(" \t") else None
        if m is not None:
            yield m
        nl = text.find("\n", at)  # a line holds one frame at most
        at = -1 if nl < 0 else text.find('File "', nl)


def _indent_at(text: str, pos: int) -> int:
    n = 0
    while pos + n < len(text) and text[pos + n] in " \t" and n < 200:
        n += 1
    return n


def _pytest_lines(text: str, ctx: Context) -> None:
    """pytest's report quotes the failing source line after a ``>`` and an indent (a
    Markdown quote has one space, so it is not taken for code)."""
    for m in _PYTEST_SOURCE.finditer(text):
        if len(ctx.code_lines) >= MAX_CODE_LINES:
            return
        ctx.code_lines.add(m.start())
        nl = text.find("\n", m.start())
        ctx.raise_lines[m.start()] = len(text) if nl < 0 else nl + 1


def _locations(text: str) -> list[str]:
    """The runs of ``text`` that are paths or module names, each word of the text read
    once (a run's first occurrence comes in the order of the first occurrences), with no
    call per run: a paste has thousands of runs, few of them locations. A run lies inside
    one whitespace-separated word, and holds the ``/``, ``::``, ``\\`` or two dots that
    make it a location, so only the words holding them are split into runs; whitespace
    splitting runs at C speed, the regex split does not, and a log repeats most of its
    words."""
    return _runs(dict.fromkeys(text.split()))


def _location_set(text: str) -> set[str]:
    """`_locations`' runs without their order, for a reader that takes them all: a set
    of the words is made faster than the ordered dict."""
    return set(_runs(set(text.split())))


def _runs(words: Iterable[str]) -> list[str]:
    """The location runs of ``words``, in their order. ASCII words (nearly
    all) are split into runs by `str.translate` (each character that ends a run made a
    space), the same runs as `_NOT_LOCATION` gives."""
    joined = " ".join([w for w in words if "/" in w or "::" in w or "\\" in w or w.count(".") >= 2])
    runs = joined.translate(_RUN_ENDS).split() if joined.isascii() else _NOT_LOCATION.split(joined)
    return [t for t in runs if "/" in t or "::" in t or "\\" in t or t.count(".") >= 2]


# The ASCII table, each character that ends a run of `_NOT_LOCATION` made a space: a
# whole table (indexed by code point), so that `str.translate` finds every character in
# it (a character missing from a dict table costs a raised and caught LookupError).
_RUN_ENDS = "".join(" " if _NOT_LOCATION.fullmatch(chr(i)) else chr(i) for i in range(128))


def _parts_each(places: list[str]) -> list[list[str]]:
    """Each of ``places`` lowercased and split at `_SPLIT`'s characters, digit-only parts
    left out: ASCII ones (nearly all) together, in one pass over their joined text at C
    speed."""
    if not places:
        return []
    joined = "\n".join(places)
    if not joined.isascii() or joined.count("\n") != len(places) - 1:
        return [[p.lower() for p in _SPLIT.split(w) if p and not p.isdigit()] for w in places]
    slashed = joined.lower().replace("\\", "/").replace(".", "/").replace(":", "/")
    return [
        [p for p in line.split("/") if p and not p.isdigit()]
        for line in slashed.replace("$", "/").split("\n")
    ]


BLOCK_LINES = 200  # lines walked each way from a match for its error block


def _indented(line: str) -> bool:
    return line[:1] in (" ", "\t")


def _block(text: str, line_start: int) -> tuple[int, int]:
    """(start, end) of the error block around the line at ``line_start``."""
    start = line_start
    pos = line_start
    for _ in range(BLOCK_LINES):  # the frames above, when they are a Python traceback's
        if pos <= 0:
            break
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev : pos - 1]
        if line.startswith("Traceback (most recent"):
            start = prev
            break
        if not _indented(line):
            break
        pos = prev
    if start == line_start and start > 0:  # else the log line that printed it, if plain
        prev = text.rfind("\n", 0, start - 1) + 1
        line = text[prev : start - 1]
        if line.strip() and not _indented(line):
            start = prev
    end = text.find("\n", line_start)
    end = len(text) if end < 0 else end
    for _ in range(BLOCK_LINES):
        if end >= len(text):
            break
        nl = text.find("\n", end + 1)
        stop = len(text) if nl < 0 else nl
        line = text[end + 1 : stop]
        after = text[stop + 1 : stop + 2] if nl >= 0 else ""
        if (
            _indented(line)
            or not line.strip()
            or line.startswith(("Caused by", "goroutine ", "..."))
            or after in (" ", "\t")
        ):
            end = stop
        else:
            break
    return start, end


@lru_cache(maxsize=8192)
def _tail(path: str, n: int) -> str:
    parts = [p.lower() for p in _SPLIT.split(path) if p]
    if parts and parts[-1] in ("py", "pyx", "java", "scala", "kt", "rs", "go"):
        parts = parts[:-1]
    return "/".join(parts[-n:])


def repo_name(repo: str) -> str:
    """The part of ``owner/name`` that shows in paths and module names."""
    return repo.rsplit("/", 1)[-1].lower()


def _named(components: set[str], name: str) -> bool:
    """``name`` is a part, or the first word of one (``risingwave`` of
    ``risingwave_stream``); ``components`` hold those first words too (`_add_heads`)."""
    return bool(name) and name in components


def _add_heads(out: set[str], parts: Iterable[str]) -> None:
    """Each part and its first word before a ``_`` or a ``-``."""
    for p in parts:
        out.add(p)
        if "_" in p:
            out.add(p.partition("_")[0])
        if "-" in p:
            out.add(p.partition("-")[0])


def printed_class(line_text: str, start_in_line: int) -> str:
    """The exception class printed right before the message on its line, or "": the
    word before a ``:`` that ends the text before the message, taken apart with string
    methods and matched whole (`_CLASS_WORD`), so no regex is tried at every position."""
    head = line_text[max(0, start_in_line - _CLASS_HEAD) : start_in_line].rstrip()
    if not head.endswith(":"):
        return ""
    head = head[:-1].rstrip()
    if not head:
        return ""
    word = head.rsplit(None, 1)[-1]
    m = _CLASS_WORD.fullmatch(word, max(word.rfind("("), word.rfind("[")) + 1)
    return m.group(1) if m else ""


def weigh(
    ctx: Context,
    facts: RecordFacts | None,
    cls: str,
    literal: str | Callable[[], str],
    repos: set[str],
    block: Callable[[], set[str]] | None = None,
) -> Weighed:
    """The evidence for one candidate: ``cls`` is the exception class printed beside
    it (`printed_class`, "" for none), ``literal`` the longest fixed text of
    the record's pattern (found in a quoted source line, it names the raising line; a
    callable is asked only when a frame is in the record's file);
    ``repos`` every repository the records come from, to say where frames point
    instead, and ``block`` gives the path parts of the match's own error block (only
    those can say that other software raised it; asked only when needed)."""
    if facts is None:
        return _NO_EVIDENCE
    weight = 0
    notes: list[tuple[int, str]] = []  # (strength, phrase): the strongest is said first
    raising = False
    other = False
    own_class = facts.own_class
    if cls and own_class:
        if cls == own_class:
            weight += SAME_CLASS
            notes.append(
                (2, f"the exception class printed beside the message, {cls}, is the record's")
            )
        else:
            weight += OTHER_CLASS
            notes.append(
                (2, f"the paste prints {cls} beside the message; the record raises {own_class}")
            )
    if facts.file_path:
        tail2 = facts.tail2
        for fr in ctx.frames_in(tail2):
            if not isinstance(literal, str):
                literal = literal()
            if not literal:
                continue
            if any(literal in q for q in fr.quoted):
                raising = True
                weight += RAISING_LINE
                notes.append(
                    (
                        0,
                        f"the traceback quotes the record's own raising line "
                        f'(File "{fr.path}", line {fr.line}): the strongest evidence there is',
                    )
                )
                break
        if not raising and tail2.count("/") == 1 and tail2 in ctx.pairs:
            weight += SAME_FILE
            notes.append((1, f"a frame of the paste is in the record's file, {facts.file_path}"))
    if facts.repo and ctx.components:
        if _named(ctx.components, facts.name):
            weight += SAME_REPO
            notes.append((3, f"the paste's file paths and module names point at {facts.repo}"))
        else:
            near = block() if block is not None else ctx.components
            elsewhere = sorted(r for r in repos if r != facts.repo and _named(near, repo_name(r)))
            if elsewhere:
                other = True
                weight += OTHER_REPO
                notes.append(
                    (3, f"the paste's frames point at {', '.join(elsewhere)}, not at {facts.repo}")
                )
    if facts.removed_in:
        weight += REMOVED
        notes.append((4, f"its raising site is no longer in the code since {facts.removed_in}"))
    if not notes:
        return _NO_EVIDENCE
    if len(notes) == 1:  # the usual case: one piece of evidence, nothing to order
        return Weighed(weight, (notes[0][1],), raising, other)
    notes.sort(key=lambda n: n[0])
    return Weighed(weight, tuple(text for _n, text in notes), raising, other)


_NO_EVIDENCE = Weighed()


SHARED_PHRASE_CHARS = 32  # a match this short, from software the paste does not point at,
# is a phrase many projects print, not that software's error


class _Once:
    """``of(pid)``, worked out on the first call only."""

    __slots__ = ("_got", "_of", "_pid")

    def __init__(self, of: Callable[[int], str], pid: int) -> None:
        self._of, self._pid = of, pid
        self._got: str | None = None

    def __call__(self) -> str:
        got = self._got
        if got is None:
            got = self._got = self._of(self._pid)
        return got


def judge(
    text: str,
    sure: list[Candidate],
    unsure: list[tuple[Candidate, str]],
    ctx: Context,
    keys: list[list[str]],
    facts: Mapping[str, RecordFacts],
    repos: set[str],
    literal_of: Callable[[int], str],
) -> tuple[list[Candidate], list[tuple[Candidate, str]], dict[int, tuple[list[str], Weighed]]]:
    """Weigh every confident candidate; the records behind one pattern put the one the
    paste points at first; a short phrase of software the paste's frames do not point at
    becomes a suggestion. Returns (sure, unsure, pid -> (keys, evidence))."""
    judged: dict[int, tuple[list[str], Weighed]] = {}
    kept: list[Candidate] = []
    for c in sure:
        ks = keys[c.pid]
        at = c.start - c.line_start

        def block(c: Candidate = c) -> set[str]:
            return ctx.block_components(text, c.line_start)

        lit = _Once(literal_of, c.pid)  # asked only when a frame is in its file
        cls = printed_class(c.line_text, at)  # the same for every record of the pattern
        if len(ks) == 1:  # most patterns have one record: nothing to put first
            best = weigh(ctx, facts.get(ks[0]), cls, lit, repos, block)
            judged[c.pid] = (ks, best)
        else:
            scored = [weigh(ctx, facts.get(k), cls, lit, repos, block) for k in ks]
            order = sorted(range(len(ks)), key=lambda i: -scored[i].weight)
            best = scored[order[0]]
            judged[c.pid] = ([ks[i] for i in order], best)
        if best.other_repo and best.weight < 0 and c.literal_exact < SHARED_PHRASE_CHARS:
            unsure.append((c, f"a phrase other software prints too: {best.notes[-1]}"))
        else:
            kept.append(c)
    return kept, unsure, judged


def longest_literal(pieces: Iterable[object]) -> str:
    """The longest fixed text of a template pattern's pieces ("" for an opaque one)."""
    texts = [getattr(p, "text", None) for p in pieces]
    return max((t for t in texts if t), key=len, default="")


QUOTED_ONLY = (
    "read in the raising line a traceback quotes: the paste shows no exception line "
    "that names this error, so the source that raised it is the evidence there is"
)


def quoted_raises(
    sure: list[Candidate], unsure: list[tuple[Candidate, str]], ctx: Context
) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """A match found only in quoted source stays a suggestion, except in the line a
    traceback's last frame quotes (the statement that raised) when the line below it (the
    exception line) has no confident match of its own: a paste cut before its exception
    line still names its error. Its values are the source's, never shown as the user's."""
    if not ctx.raise_lines:
        return sure, unsure
    answered = {c.line_start for c in sure}
    kept: list[tuple[Candidate, str]] = []
    promoted = False
    for c, why in unsure:
        below = ctx.raise_lines.get(c.line_start) if c.code else None
        if below is not None and below not in answered:
            c.code = False
            ok, _ = confident(c)
            if ok:
                c.quoted = True
                sure.append(c)
                promoted = True
                continue
            c.code = True
        kept.append((c, why))
    if promoted:
        sure.sort(key=order_key)
    return sure, kept
