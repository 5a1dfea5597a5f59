"""Line-structure pass: decoded JSON values, joined wraps, tracebacks, folded quotes.

The pass never rewrites a pasted line: it copies the text and *inserts* extra logical lines
("variants") right after the lines they come from -- a JSON line's decoded ``msg``/``error``
values, a hard-wrapped or pretty-printed message joined into one line, a line with
typographic quotes folded to ASCII -- each mapped back to the original characters it was
made from. Patterns that match the pasted text as it is still match; patterns that need the
cleaned form find it on the variant. It also records marks (kind, level, body start) for
lines whose kind depends on context, such as the last exception of a chained traceback.

Only *hot* lines are visited in Python: lines that do not start like a prefixed log line, or
that contain ``{"``, ``\\"`` or typographic characters. A plain timestamped log has none, so
its text is returned as is.

Parts: this module holds the core (line helpers, marks, inserting variants, finding the
hot lines, dispatch, per-line unescaped/folded copies); `_joins.py` (wrapped lines and
pretty-printed values), `_json_lines.py` (JSON log lines) and `_stacks.py` (tracebacks,
panics, cause lists) hold the rest of `Structurer` as mixins.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ._classify import FRAME, classify
from ._clean import FOLD, TYPO_RE, describe_counts
from ._escapes import Piece, decode_escapes
from ._joins import MAX_RUN_CHARS, MAX_RUN_LINES, WRAP_SLACK, JoinsMixin, is_fixed_width
from ._json_lines import JsonLinesMixin
from ._mapping import Builder, Layer
from ._prefix import prefix_info
from ._stacks import MAX_EXC_LINES, StacksMixin
from ._traceback import PY_TB_RE

__all__ = [  # the run limits and `is_fixed_width` live in `_joins.py`/`_stacks.py` now
    "BIG_TEXT",
    "HOT_LINE_BIG",
    "HOT_LINE_BIG_ALTERNATIVES",
    "MAX_EXC_LINES",
    "MAX_LINE_WORK",
    "MAX_RUN_CHARS",
    "MAX_RUN_LINES",
    "WRAP_SLACK",
    "Mark",
    "Structurer",
    "is_fixed_width",
]


# A line start that does not look like a prefixed log line (or a blank line).
_HOT_LINE_RE = re.compile(
    r"\n(?![0-9\[\n]|[A-Z][a-z]{2} [ \d]\d |[IWEF]\d{4} "
    r"|(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b|time=)"
)
# In a whole log (> BIG_TEXT) only lines that start structure are visited: indented lines
# (frames, continuations, pretty-printed values), traceback/panic headers, JSON objects. Plain
# unprefixed lines (program output without timestamps) are then scanned as they are, so
# prose-style wrap joining is a paste-size feature.
HOT_LINE_BIG = (
    r"[ \t]",
    r"\{",
    r"Traceback \(",
    "Caused by",
    "Exception in thread",
    "During handling",
    "The above exception",
    "panic: ",
    r"goroutine \d",
    "thread '",
    "Error: ",
    "error: ",
)  # fmt: skip - also compiled into the whole-log prefilter (_prefilter.py)
HOT_LINE_BIG_ALTERNATIVES = "|".join(HOT_LINE_BIG)
_HOT_LINE_BIG_RE = re.compile(r"\n(?=" + HOT_LINE_BIG_ALTERNATIVES + ")")
_RUST_PANIC_HEAD_RE = re.compile(r".*\bthread '[^'\n]*' panicked at \S+:\d+:\d+:\s*$")
_ANYHOW_CAUSES_RE = re.compile(r"(?:Caused by:|Caused by these errors \([^)\n]*\):)\s*$")

MAX_LINE_WORK = 1 << 18  # lines longer than this get no variants (linear-time guard)
BIG_TEXT = 4_000_000  # above this (a whole log, not a paste) INFO JSON lines are not decoded


@dataclass(slots=True)
class Mark:
    """What the structure pass knows about one line of the output."""

    kind: str | None = None  # None: let the lazy classifier decide
    derived: str | None = None  # None for a pasted line; "json", "joined", "folded", ...
    level: str | None = None
    body: int = -1  # offset of the message body inside the line (-1: classifier decides)
    exc_type: str | None = None


_STRUCTURE_STEPS = {
    "json": "decoded {n} JSON log line{s}",
    "unescaped": "unescaped quotes on {n} line(s)",
    "joined": "joined {n} wrapped message(s) into single lines",
    "collapsed": "collapsed {n} multi-line value(s) onto one line",
    "folded": "added ASCII-quote copies of {n} line(s) with typographic quotes",
    "quiet_json": "left {n} INFO/DEBUG JSON line(s) undecoded (large log)",
}


class Structurer(StacksMixin, JsonLinesMixin, JoinsMixin):
    """The structure pass over one text (or one region of a whole log); see module doc."""

    def __init__(self, src: str, *, big: bool | None = None, visit_first: bool = True) -> None:
        self.src = src
        self.b = Builder()
        self.copied = 0
        self.marks: dict[int, Mark] = {}
        self.budget = len(src) + 65_536  # at most about doubles the text
        self.counts = dict.fromkeys(_STRUCTURE_STEPS, 0)
        self.big = len(src) > BIG_TEXT if big is None else big  # a region of a whole log: True
        self.visit_first = visit_first  # False for a region: line 0 is context, not hot
        self.exhausted = False
        self._kind_cache: dict[int, str] = {}
        self._prefix_cache: dict[int, tuple[int, str | None]] = {}
        # no typographic character anywhere: per-line checks can be skipped (decoded
        # escapes may still produce one, so variants with replaced pieces are checked)
        self.typo_free = _typo_free(src)

    # -- low-level helpers ------------------------------------------------------------
    def line_end(self, ls: int) -> int:
        le = self.src.find("\n", ls)
        return len(self.src) if le < 0 else le

    def next_line(self, ls: int) -> int:
        le = self.line_end(ls)
        return le + 1 if le < len(self.src) else -1

    def prev_line(self, ls: int) -> int:
        if ls <= 0:
            return -1
        return self.src.rfind("\n", 0, ls - 1) + 1

    def kind_of(self, ls: int) -> str:
        k = self._kind_cache.get(ls)
        if k is None:
            if len(self._kind_cache) > 4096:
                self._kind_cache.clear()
            line = self.src[ls : self.line_end(ls)]
            k = self._kind_cache[ls] = classify(line, self.prefix(ls))[0]
        return k

    def prefix(self, ls: int) -> tuple[int, str | None]:
        """`prefix_info` of source line ``ls`` (memoised: a line is asked about up to five
        times, as a run's member, its neighbour and its head)."""
        got = self._prefix_cache.get(ls)
        if got is None:
            if len(self._prefix_cache) > 4096:
                self._prefix_cache.clear()
            got = self._prefix_cache[ls] = prefix_info(self.src[ls : self.line_end(ls)])
        return got

    def norm_pos(self, x: int) -> int:
        return self.b.pos + (x - self.copied)

    def mark(self, ls: int, **kw) -> int | None:
        """Record what is known about source line ``ls``; returns its key in `marks`."""
        if ls < self.copied:
            return None
        key = self.norm_pos(ls)
        m = self.marks.get(key)
        if m is None:
            self.marks[key] = Mark(**kw)
        else:
            for k, v in kw.items():
                setattr(m, k, v)
        return key

    def add_variant(
        self,
        after: int,
        lines: list[list[Piece]],
        per_line: list[dict] | None = None,
        **mark,
    ) -> list[int]:
        """Insert variant lines after the line ending at ``after`` (a "\\n" or len(src)).

        ``mark`` applies to every line; ``per_line[i]`` (if given) overrides it for line i.
        Returns the `marks` keys of the inserted lines.
        """
        keys: list[int] = []
        if after < self.copied:
            return keys
        cost = sum(e - s + 1 for line in lines for _, s, e in line)
        if cost > self.budget:
            self.exhausted = True
            return keys
        self.budget -= cost
        src = self.src
        b = self.b
        b.copy(src, self.copied, after)
        self.copied = after
        for i, pieces in enumerate(lines):
            text = "".join(src[s:e] if t is None else t for t, s, e in pieces)
            if not text.strip():
                continue
            line_mark = {**mark, **per_line[i]} if per_line else mark
            b.emit("\n", after, after)
            self.marks[b.pos] = Mark(**line_mark)
            keys.append(b.pos)
            for t, s, e in pieces:
                if t is None:
                    b.copy(src, s, e)
                else:
                    b.emit(t, s, e)
            may_have_typo = not self.typo_free or any(
                t is not None and not t.isascii() for t, _, _ in pieces
            )
            if may_have_typo and TYPO_RE.search(text):
                b.emit("\n", after, after)
                self.marks[b.pos] = Mark(**{**line_mark, "derived": "folded"})
                keys.append(b.pos)
                for t, s, e in pieces:
                    piece = src[s:e] if t is None else t
                    b.emit(piece.translate(FOLD), s, e)
        return keys

    # -- main loop ----------------------------------------------------------------------
    def run(self) -> tuple[str, Layer | None, dict[int, Mark], list[str]]:
        src = self.src
        if not src:
            return src, None, {}, []
        starts = self._hot_starts()
        handled = 0
        for ls in starts:
            if ls < handled:
                continue
            handled = self._handle(ls)
        if self.b.pos == 0 and self.copied == 0:
            return src, None, self.marks_identity(), self._steps()
        self.b.copy(src, self.copied, len(src))
        out, layer = self.b.finish(len(src))
        return out, layer, self.marks, self._steps()

    def marks_identity(self) -> dict[int, Mark]:
        # nothing inserted: norm offsets == src offsets, marks were keyed correctly
        return self.marks

    def _steps(self) -> list[str]:
        steps = describe_counts(self.counts, _STRUCTURE_STEPS)
        if self.exhausted:
            steps.append("stopped adding joined/decoded copies: size budget reached")
        return steps

    def _hot_starts(self) -> Iterator[int]:
        """Starts of the lines worth a look, ascending, without building a list of them."""
        src = self.src
        streams: list[Iterator[int]] = [
            iter((0,) if self.visit_first else ()),
            (m.start() + 1 for m in (_HOT_LINE_BIG_RE if self.big else _HOT_LINE_RE).finditer(src)),
        ]
        for needle in ('{"', '\\"'):
            if needle[0] in src and needle in src:
                streams.append(self._needle_lines(needle))
        if not self.typo_free:
            streams.append(self._regex_lines(TYPO_RE))
        last = -1
        n = len(src)
        for ls in heapq.merge(*streams):
            if ls != last and ls < n:
                last = ls
                yield ls

    def _regex_lines(self, rx: re.Pattern[str]) -> Iterator[int]:
        """Starts of the lines holding a match of ``rx`` (each line once, linear time)."""
        src = self.src
        m = rx.search(src)
        while m is not None:
            yield src.rfind("\n", 0, m.start()) + 1
            le = src.find("\n", m.end())
            if le < 0:
                return
            m = rx.search(src, le)

    def _needle_lines(self, needle: str) -> Iterator[int]:
        src = self.src
        i = src.find(needle)
        while i >= 0:
            yield src.rfind("\n", 0, i) + 1
            le = src.find("\n", i)
            if le < 0:
                return
            i = src.find(needle, le)

    # -- dispatch -----------------------------------------------------------------------
    def _handle(self, ls: int) -> int:
        src = self.src
        le = self.line_end(ls)
        if le - ls > MAX_LINE_WORK:
            return le + 1  # a giant line (minified dump): scanned as it is
        line = src[ls:le]
        pl, level = (0, None) if line[:1] == "{" else self.prefix(ls)
        rest = line[pl:]
        if PY_TB_RE.match(rest):
            return self._python_traceback(ls)
        if rest.lstrip().startswith('{"') or rest.startswith("{ "):
            self._json_line(ls, le, pl, level)
            return le + 1
        if "panicked at" in rest and _RUST_PANIC_HEAD_RE.match(rest):
            return self._rust_panic(ls, level)
        if _ANYHOW_CAUSES_RE.match(rest):
            return self._anyhow_causes(ls)
        if rest.startswith("goroutine ") and classify(rest)[0] == FRAME:
            return self._goroutine(ls)
        # wrapped / pretty-printed runs: start at the previous line if this one continues it
        head = ls
        p = self.prev_line(ls)
        if p >= 0 and p >= self.copied and self._continues(p, ls):
            head = p
        run = self._run_from(head)
        for s in run:
            self._line_variants(s)
        if len(run) >= 2:
            head_line = src[head : self.line_end(head)]
            pl, level = self.prefix(head)
            self._join_run(run, level=level)
            if head_line[pl:].strip() == "{":
                self._json_block(run, level)
        return self.line_end(run[-1]) + 1

    # -- per-line variants ------------------------------------------------------------
    def _line_variants(self, ls: int, **mark) -> list[int]:
        """Unescaped / ASCII-quote copies of one pasted line; returns their `marks` keys."""
        src = self.src
        le = self.line_end(ls)
        if le - ls > MAX_LINE_WORK:
            return []
        if src.find('\\"', ls, le) >= 0:
            pl, level = self.prefix(ls)
            lines = decode_escapes(src, ls + pl, le)
            if len(lines) > 1 or any(t is not None for t, _, _ in lines[0]):
                self.counts["unescaped"] += 1
                return self.add_variant(le, lines, derived="unescaped", **{"level": level, **mark})
        if not self.typo_free and TYPO_RE.search(src, ls, le):
            return self.add_variant_folded(ls, le, **mark)
        return []

    def add_variant_folded(self, ls: int, le: int, **mark) -> list[int]:
        src = self.src
        text = src[ls:le].translate(FOLD)
        if text == src[ls:le]:
            return []
        # 1:1 folds keep the mapping linear; only "…" -> "..." changes length, so the line is
        # cut around each ellipsis and every other stretch is one (linear) piece
        pieces: list[Piece] = []
        pos = ls
        i = src.find("\u2026", ls, le)
        while i >= 0:
            if i > pos:
                pieces.append((src[pos:i].translate(FOLD), pos, i))
            pieces.append(("...", i, i + 1))
            pos = i + 1
            i = src.find("\u2026", pos, le)
        if pos < le:
            pieces.append((src[pos:le].translate(FOLD), pos, le))
        self.counts["folded"] += 1
        level = self.prefix(ls)[1]
        return self.add_variant(le, [pieces], derived="folded", **{"level": level, **mark})


def _typo_free(src: str) -> bool:
    """No typographic quote, dash or ellipsis in ``src`` (all of them are above U+2000, so
    a Latin-1 text -- checked by an encode at C speed -- has none)."""
    if src.isascii():
        return True
    try:
        src.encode("latin-1")
    except UnicodeEncodeError:
        return TYPO_RE.search(src) is None
    return True
