"""Python tracebacks inside a single string (a JSON ``exc_info``) and shared helpers."""

from __future__ import annotations

import re

from ._classify import CAUSED_BY, EXCEPTION, FRAME, exception_class

PY_TB_RE = re.compile(r"Traceback \(most recent call last\):")
PY_CHAIN_RE = re.compile(
    r"During handling of the above exception|The above exception was the direct cause"
)
_PY_EXC_NAME_RE = re.compile(r"([A-Za-z_][\w.]*)(?::[ \t]*|[ \t]*$)")


PY_FRAME_RE = re.compile(r'[ \t]+File "')


def wrapped_frame_tail(prev_len: int, rest: str) -> bool:
    """An unindented line in a traceback's frames after a long line: a terminal-wrapped
    frame or source line goes on, unless it reads like the exception line ("Name: ...")."""
    if prev_len < 60:
        return False
    return py_exception_class(rest)[1] is None


def py_exception_class(rest: str) -> tuple[int, str | None]:
    """Exception class at the start of a traceback's exception line (any name goes there)."""
    n, cls = exception_class(rest)
    if cls is None:
        m = _PY_EXC_NAME_RE.match(rest)
        if m:
            n, cls = m.end(), m.group(1)
    return n, cls


def traceback_marks(texts: list[str]) -> list[dict] | None:
    """Kinds of the lines of a Python traceback held in one string (a JSON ``exc_info``)."""
    if not any(PY_TB_RE.match(t) for t in texts):
        return None
    out: list[dict] = [{} for _ in texts]
    state = ""
    group: list[int] = []
    for i, t in enumerate(texts):
        if PY_TB_RE.match(t):
            out[i] = {"kind": FRAME}
            state = "frames"
        elif PY_CHAIN_RE.match(t):
            for g in group:
                out[g]["kind"] = CAUSED_BY
            group = []
            out[i] = {"kind": FRAME}
            state = "chain"
        elif state == "frames":
            if t[:1] in " \t":
                out[i] = {"kind": FRAME}
            else:
                n, cls = py_exception_class(t)
                out[i] = {"kind": EXCEPTION, "body": n, "exc_type": cls}
                group.append(i)
                state = "exc"
        elif state == "exc":
            if t.strip():
                out[i] = {"kind": EXCEPTION, "body": 0}
                group.append(i)
            else:
                state = "after"
    return out
