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
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ._classify import (
    CAUSED_BY,
    EXCEPTION,
    FRAME,
    classify,
    numbered_body,
)
from ._clean import FOLD, TYPO_RE
from ._escapes import (
    JSON_LEVEL_RE,
    JSON_MESSAGE_PAIR_RE,
    JSON_PAIR_RE,
    MESSAGE_KEYS,
    QUIET_LEVELS,
    SKIP_KEYS,
    Piece,
    decode_escapes,
)
from ._mapping import Builder, Layer
from ._prefix import canonical_level, prefix_info
from ._traceback import (
    PY_CHAIN_RE,
    PY_FRAME_RE,
    PY_TB_RE,
    py_exception_class,
    traceback_marks,
    wrapped_frame_tail,
)

# A line start that does not look like a prefixed log line (or a blank line).
_HOT_LINE_RE = re.compile(
    r"\n(?![0-9\[\n]|[A-Z][a-z]{2} [ \d]\d |[IWEF]\d{4} "
    r"|(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b|time=)"
)
# In a whole log (> BIG_TEXT) only lines that start structure are visited: indented lines
# (frames, continuations, pretty-printed values), traceback/panic headers, JSON objects. Plain
# unprefixed lines (program output without timestamps) are then scanned as they are, so
# prose-style wrap joining is a paste-size feature.
HOT_LINE_BIG_ALTERNATIVES = (
    r"[ \t]|\{|Traceback \(|Caused by|Exception in thread|During handling"
    r"|The above exception|panic: |goroutine \d|thread '|Error: |error: "
)  # also compiled into the whole-log prefilter (_prefilter.py)
_HOT_LINE_BIG_RE = re.compile(r"\n(?=" + HOT_LINE_BIG_ALTERNATIVES + ")")
_RUST_PANIC_HEAD_RE = re.compile(r".*\bthread '[^'\n]*' panicked at \S+:\d+:\d+:\s*$")
_ANYHOW_CAUSES_RE = re.compile(r"(?:Caused by:|Caused by these errors \([^)\n]*\):)\s*$")
_OPENERS = "([{"
_CLOSERS = ")]}"

MAX_RUN_LINES = 60
MAX_EXC_LINES = 24  # an exception message longer than this is taken to have ended
WRAP_SLACK = 3  # a line this close to the run's widest is taken as cut by a terminal
MAX_LINE_WORK = 1 << 18  # lines longer than this get no variants (linear-time guard)
BIG_TEXT = 4_000_000  # above this (a whole log, not a paste) INFO JSON lines are not decoded
MAX_RUN_CHARS = 16_384


@dataclass(slots=True)
class Mark:
    """What the structure pass knows about one line of the output."""

    kind: str | None = None  # None: let the lazy classifier decide
    derived: str | None = None  # None for a pasted line; "json", "joined", "folded", ...
    level: str | None = None
    body: int = -1  # offset of the message body inside the line (-1: classifier decides)
    exc_type: str | None = None


class Structurer:
    def __init__(self, src: str, *, big: bool | None = None, visit_first: bool = True) -> None:
        self.src = src
        self.b = Builder()
        self.copied = 0
        self.marks: dict[int, Mark] = {}
        self.budget = len(src) + 65_536  # at most about doubles the text
        self.counts = {
            "json": 0,
            "joined": 0,
            "folded": 0,
            "unescaped": 0,
            "collapsed": 0,
            "quiet_json": 0,
        }
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
    ) -> None:
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
        c = self.counts
        steps = []
        if c["json"]:
            steps.append(f"decoded {c['json']} JSON log line{'s' * (c['json'] != 1)}")
        if c["unescaped"]:
            steps.append(f"unescaped quotes on {c['unescaped']} line(s)")
        if c["joined"]:
            steps.append(f"joined {c['joined']} wrapped message(s) into single lines")
        if c["collapsed"]:
            steps.append(f"collapsed {c['collapsed']} multi-line value(s) onto one line")
        if c["folded"]:
            steps.append(
                f"added ASCII-quote copies of {c['folded']} line(s) with typographic quotes"
            )
        if c["quiet_json"]:
            n = c["quiet_json"]
            steps.append(f"left {n} INFO/DEBUG JSON line(s) undecoded (large log)")
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

    def _json_block(self, run: list[int], level: str | None) -> None:
        """A pretty-printed JSON object over several lines: decode its message values too."""
        src = self.src
        spans: list[tuple[int, int]] = []
        for ls in run:
            le = self.line_end(ls)
            m = JSON_LEVEL_RE.search(src, ls, le)
            if m:
                level = canonical_level(m.group("lvl")) or level
            spans += [
                m.span(2)
                for m in JSON_MESSAGE_PAIR_RE.finditer(src, ls, le)
                if m.end(2) - m.start(2) >= 4
            ]
        if not spans:
            return
        lines: list[list[Piece]] = []
        for vs, ve in spans:
            lines.extend(decode_escapes(src, vs, ve))
        texts = ["".join(src[s:e] if t is None else t for t, s, e in p) for p in lines]
        self.counts["json"] += 1
        self.add_variant(
            self.line_end(run[-1]),
            lines,
            per_line=traceback_marks(texts),
            derived="json",
            level=level,
        )

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

    # -- JSON -------------------------------------------------------------------------
    def _json_line(self, ls: int, le: int, pl: int, level: str | None) -> None:
        src = self.src
        js = ls + pl
        while js < le and src[js] in " \t":
            js += 1
        m = JSON_LEVEL_RE.search(src, js, min(le, js + 400))
        jlevel = (canonical_level(m.group("lvl")) if m else None) or level
        has_esc = src.find("\\", js, le) >= 0
        if jlevel in QUIET_LEVELS and (not has_esc or self.big):
            # not an error, and nothing to decode (or a whole log, where decoding every
            # INFO line would cost more than it helps): the raw line is scanned as it is
            if has_esc:
                self.counts["quiet_json"] += 1
            return
        spans = self._json_value_spans(js, le)
        self.mark(ls, level=jlevel)
        if not spans:
            return
        lines: list[list[Piece]] = []
        for vs, ve in spans:
            lines.extend(decode_escapes(src, vs, ve))
        texts = ["".join(src[s:e] if t is None else t for t, s, e in p) for p in lines]
        self.add_variant(le, lines, per_line=traceback_marks(texts), derived="json", level=jlevel)
        self.counts["json"] += 1

    def _json_value_spans(self, js: int, le: int) -> list[tuple[int, int]]:
        """Raw spans (inside the quotes) of the message-like string values of a JSON line."""
        spans = [
            m.span(2)
            for m in JSON_MESSAGE_PAIR_RE.finditer(self.src, js, le)
            if m.end(2) - m.start(2) >= 4
        ]
        return spans or self._json_value_spans_loose(js, le)

    def _json_value_spans_loose(self, js: int, le: int) -> list[tuple[int, int]]:
        """For JSON that does not parse (cut off, pasted partly): find "key": "value" pairs."""
        src = self.src
        spans = []
        for m in JSON_PAIR_RE.finditer(src, js, le):
            key = m.group(1).lower()
            if key in SKIP_KEYS:
                continue
            vs, ve = m.span(2)
            if ve - vs >= 4 and (
                key in MESSAGE_KEYS
                or key.endswith(("error", "message", "msg"))
                or (src.find("\\", vs, ve) >= 0 and ve - vs >= 8)
            ):
                spans.append((vs, ve))
        return spans

    # -- wrapped lines and pretty-printed values ------------------------------------------
    def _continues(self, p: int, ls: int) -> bool:
        """Does line ``ls`` continue line ``p`` (a wrap or a multi-line value)?"""
        src = self.src
        pe = self.line_end(p)
        le = self.line_end(ls)
        prev = src[p:pe]
        line = src[ls:le]
        if not prev.strip() or not line.strip():
            return False
        if line.startswith(("{", "```")) or self.prefix(ls)[0]:
            return False
        if self.kind_of(ls) in (FRAME, EXCEPTION, CAUSED_BY) or self.kind_of(p) == FRAME:
            return False
        ps = prev.rstrip()
        if ps.endswith(tuple(_OPENERS)):
            return True  # pretty-printed value
        if line[0] in " \t" or line.lstrip()[:1] in _CLOSERS:
            return True  # indented continuation / closing bracket
        if len(prev) >= 60:
            return True  # a long line cut by a terminal or by hand
        # a sentence broken by hand: the line stops on a comma or a trailing space, or the
        # next one goes on in lower case after a line without closing punctuation
        if ps.endswith(",") or (prev[-1:] in " \t" and len(ps) >= 20):
            return True
        return (
            line[:1].islower()
            and len(ps) >= 30
            and ps[-1:] not in ".:;!?"
            and not self.prefix(p)[0]
        )

    def _run_from(self, head: int) -> list[int]:
        run = [head]
        total = self.line_end(head) - head
        cur = head
        while len(run) < MAX_RUN_LINES and total < MAX_RUN_CHARS:
            nxt = self.next_line(cur)
            if nxt < 0 or not self._continues(cur, nxt):
                break
            run.append(nxt)
            total += self.line_end(nxt) - nxt
            cur = nxt
        return run

    def _join_run(self, run: list[int], *, level: str | None, kind: str | None = None) -> list[int]:
        """Insert the joined form(s) of a run of lines after its last line.

        Always the *soft* join (a space where the line break was, indentation dropped:
        right for hand-wrapped text and pretty-printed values). When lines stop at (nearly)
        the run's widest column -- a terminal's hard wrap, possibly cut inside a word -- also
        the *hard* join, which glues those lines with nothing.
        """
        spans = [(s, self.line_end(s)) for s in run]
        widths = [e - s for s, e in spans]
        soft, pretty = self._join_pieces(spans, hard_width=None)
        variants = [(soft, pretty)]
        wrap_width = max(widths[:-1])
        if not pretty and wrap_width >= 40:
            hard, _ = self._join_pieces(spans, hard_width=wrap_width - WRAP_SLACK)
            if hard != soft:
                # strong evidence of a terminal wrap: the hard join first
                if is_fixed_width(widths):
                    variants.insert(0, (hard, False))
                else:
                    variants.append((hard, False))
        keys = []
        for pieces, is_pretty in variants:
            derived = "collapsed" if is_pretty else "joined"
            self.counts[derived] += 1
            keys += self.add_variant(
                spans[-1][1], [pieces], derived=derived, level=level, kind=kind
            )
        return keys

    def _join_pieces(
        self, spans: list[tuple[int, int]], *, hard_width: int | None
    ) -> tuple[list[Piece], bool]:
        """Pieces of a joined line, and whether it is a pretty-printed value.

        A line at least ``hard_width`` long (a terminal wrap) is glued to the next as is;
        elsewhere the break becomes one space and the next line's indentation is dropped.
        """
        src = self.src
        pieces: list[Piece] = []
        head_pl = self.prefix(spans[0][0])[0]
        pretty = False
        for i, (s, e) in enumerate(spans):
            start = s + head_pl if i == 0 else s
            hard = i > 0 and hard_width is not None and _cut(spans[i - 1], (s, e), hard_width)
            if i > 0 and not hard:
                prev_text = src[spans[i - 1][0] : spans[i - 1][1]]
                cur = src[s:e]
                stripped = cur.lstrip(" \t")
                start = s + (len(cur) - len(stripped))
                prev_end = prev_text.rstrip()[-1:]
                if prev_end in _OPENERS or stripped[:1] in _CLOSERS:
                    pretty = True
                if not (prev_text[-1:] in " \t" or prev_end in "([" or stripped[:1] in ")]"):
                    pieces.append((" ", s - 1, s))  # the newline becomes a space (1:1)
            end = e
            more = i + 1 < len(spans)
            next_hard = hard_width is not None and more and _cut((s, e), spans[i + 1], hard_width)
            if i + 1 < len(spans) and not next_hard:
                nxt = src[spans[i + 1][0] : spans[i + 1][1]].strip()[:1]
                body = src[start:e].rstrip()
                if nxt and nxt in _CLOSERS and body.endswith(","):
                    end = start + len(body) - 1  # drop a trailing comma before a closer
            if end > start:
                pieces.append((None, start, end))
        return pieces, pretty

    # -- tracebacks ---------------------------------------------------------------------
    def _python_traceback(self, ls: int) -> int:
        """Mark a Python traceback: frames, the final exception, earlier chained causes."""
        src = self.src
        head_pl = self.prefix(ls)[0]
        self.mark(ls, kind=FRAME)
        cur = self.next_line(ls)
        state = "frames"
        exc_lines: list[int] = []  # lines of the current exception message
        exc_keys: list[int | None] = []  # their `marks` keys (and their variants')
        causes: list[int | None] = []  # keys of finished exceptions, until a chain marker
        last = ls
        prev_len = self.line_end(ls) - ls
        while cur >= 0:
            le = self.line_end(cur)
            line = src[cur:le]
            pl = prefix_info(line)[0]
            if pl and not head_pl:
                break  # a new log entry after an unprefixed traceback
            rest = line[pl:]
            if not rest.strip():
                if state == "exc":
                    state = "after"
            elif PY_TB_RE.match(rest) or PY_CHAIN_RE.match(rest):
                causes += exc_keys + self._finish_exc(exc_lines)
                exc_lines, exc_keys = [], []
                if PY_CHAIN_RE.match(rest):
                    for key in causes:
                        if key is not None:
                            self.marks[key].kind = CAUSED_BY
                    causes = []
                self.mark(cur, kind=FRAME)
                state = "frames" if PY_TB_RE.match(rest) else "chain"
            elif state == "frames":
                if rest[:1] in " \t" or wrapped_frame_tail(prev_len, rest):
                    self.mark(cur, kind=FRAME)
                else:
                    n, cls = py_exception_class(rest)
                    exc_keys.append(self.mark(cur, kind=EXCEPTION, body=pl + n, exc_type=cls))
                    exc_keys += self._line_variants(cur, kind=EXCEPTION)
                    exc_lines = [cur]
                    state = "exc"
            elif state == "exc" and PY_FRAME_RE.match(rest):
                # what looked like the exception was the tail of a wrapped frame line
                for key in exc_keys:
                    if key is not None:
                        self.marks[key].kind = FRAME
                exc_lines, exc_keys = [], []
                self.mark(cur, kind=FRAME)
                state = "frames"
            elif state == "exc" and len(exc_lines) >= (8 if self.big else MAX_EXC_LINES):
                break  # an unprefixed log goes on after the traceback without a blank line
            elif state == "exc":
                exc_keys.append(self.mark(cur, kind=EXCEPTION, body=pl))
                exc_keys += self._line_variants(cur, kind=EXCEPTION)
                exc_lines.append(cur)
            else:
                break  # "after"/"chain" followed by something that is not a traceback
            last = cur
            prev_len = le - cur
            cur = self.next_line(cur)
        self._finish_exc(exc_lines)
        return self.line_end(last) + 1

    def _finish_exc(self, exc_lines: list[int]) -> list[int]:
        if len(exc_lines) >= 2:
            return self._join_run(exc_lines, level=None, kind=EXCEPTION)
        return []

    def _rust_panic(self, ls: int, level: str | None) -> int:
        self.mark(ls, kind=FRAME, level=level)
        cur = self.next_line(ls)
        lines = []
        while cur >= 0 and len(lines) < MAX_RUN_LINES:
            line = self.src[cur : self.line_end(cur)]
            if not line.strip() or line.startswith(("note: ", "stack backtrace:")):
                break
            self.mark(cur, kind=EXCEPTION, level=level, body=0)
            lines.append(cur)
            cur = self.next_line(cur)
        if len(lines) >= 2:
            self._join_run(lines, level=level, kind=EXCEPTION)
        return self.line_end(lines[-1] if lines else ls) + 1

    def _anyhow_causes(self, ls: int) -> int:
        self.mark(ls, kind=FRAME)
        cur = self.next_line(ls)
        last = ls
        while cur >= 0:
            line = self.src[cur : self.line_end(cur)]
            if not line.strip() or line[:1] not in " \t":
                break
            self.mark(
                cur, kind=CAUSED_BY, body=numbered_body(line) or len(line) - len(line.lstrip())
            )
            last = cur
            cur = self.next_line(cur)
        return self.line_end(last) + 1

    def _goroutine(self, ls: int) -> int:
        cur = ls
        last = ls
        while cur >= 0:
            line = self.src[cur : self.line_end(cur)]
            if not line.strip():
                break
            self.mark(cur, kind=FRAME)
            last = cur
            cur = self.next_line(cur)
        return self.line_end(last) + 1


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


def _cut(line: tuple[int, int], nxt: tuple[int, int], hard_width: int) -> bool:
    """Was ``line`` cut by a terminal at about ``hard_width`` columns, ``nxt`` going on?

    Only if it reaches that width and the next line is no longer than it: a terminal
    never writes a continuation wider than its own width.
    """
    width = line[1] - line[0]
    return width >= hard_width and nxt[1] - nxt[0] <= width + WRAP_SLACK


_TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 160, 200, 240, 250, 256})


def is_fixed_width(widths: list[int]) -> bool:
    """Do these line lengths look like a terminal's hard wrap at a fixed column?"""
    if len(widths) < 2:
        return False
    w = widths[0]
    if w < 40 or widths[-1] > w or any(x != w for x in widths[:-1]):
        return False
    return len(widths) >= 3 or w in _TERMINAL_WIDTHS
