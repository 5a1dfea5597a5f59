"""Wrapped lines and pretty-printed values: which lines continue which, and their joins.

Why this exists apart from `_structure.py`: deciding that a line goes on from the one
above (a terminal's hard wrap, a hand-broken sentence, an indented continuation, a value
spread over lines) and building the joined variants -- soft (a space per break) and hard
(glued at a fixed column) -- is its own set of heuristics and limits. `JoinsMixin` is one
of the parts of `Structurer`; it uses the core's line helpers, `prefix`, `kind_of` and
`add_variant`.
"""

from __future__ import annotations

from ._classify import CAUSED_BY, EXCEPTION, FRAME
from ._escapes import Piece
from ._parts import StructurerParts

_OPENERS = "([{"
_CLOSERS = ")]}"

MAX_RUN_LINES = 60
WRAP_SLACK = 3  # a line this close to the run's widest is taken as cut by a terminal
MAX_RUN_CHARS = 16_384


class JoinsMixin(StructurerParts):
    """Runs of continued lines and their joined variants (part of `Structurer`)."""

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
                if len(widths) >= 3 and is_fixed_width(widths):
                    # three or more lines cut at one column: a terminal's wrap for sure.
                    # The hard join alone: a space at each cut is text the log never had,
                    # and the size budget then covers every run of a long wrapped paste.
                    variants = [(hard, False)]
                elif is_fixed_width(widths):
                    variants.insert(0, (hard, False))  # likely a wrap: the hard join first
                else:
                    variants.append((hard, False))
        keys: list[int] = []
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
