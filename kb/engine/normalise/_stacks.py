"""Tracebacks, panics and cause lists: which lines are frames, which the exception.

Why this exists apart from `_structure.py`: a line's kind (frame, exception, earlier
cause) often depends on the lines around it -- a Python traceback's last exception vs the
chained ones before "During handling...", a wrapped frame line's tail, a Rust panic's
message, an anyhow "Caused by:" list, a goroutine dump. `StacksMixin` walks those blocks
and records `Mark`s; it is one of the parts of `Structurer` and uses the core's line
helpers, `mark`, `_line_variants` and `JoinsMixin._join_run`.
"""

from __future__ import annotations

from ._classify import CAUSED_BY, EXCEPTION, FRAME, numbered_body
from ._joins import MAX_RUN_LINES
from ._parts import StructurerParts
from ._prefix import prefix_info
from ._traceback import PY_CHAIN_RE, PY_FRAME_RE, PY_TB_RE, py_exception_class, wrapped_frame_tail

MAX_EXC_LINES = 24  # an exception message longer than this is taken to have ended


class StacksMixin(StructurerParts):
    """Marks for traceback-like blocks (part of `Structurer`)."""

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
        maybe_tail = False
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
                causes += [*exc_keys, *self._finish_exc(exc_lines)]
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
                    # a bare name after a long frame line may be that line's wrapped tail
                    maybe_tail = prev_len >= 60 and ":" not in rest
            elif state == "exc" and (
                PY_FRAME_RE.match(rest)
                or (maybe_tail and len(exc_lines) == 1 and rest[:1] in " \t")
            ):
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
        lines: list[int] = []
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
