"""The error lines of a paste: what a report of an unknown error stores, and what its gap
is made from.

Why only these lines: a paste is mostly context (INFO chatter, stack frames, shell prompts,
environment dumps) that says nothing about which error it is and may say a lot about the
person's system. The report keeps the lines that carry the error -- exception heads and
the last line of a traceback, `Caused by:` chains, panics, `error:` lines, WARN/ERROR/FATAL
log lines -- cut to their message: the matcher's normaliser (`kb.engine.normalise`)
already recognises timestamps, levels and log prefixes, decodes JSON log lines and marks
frames, so the lines stored are the message and not the envelope, exactly as the matcher
saw them.

Bounded: at most `MAX_LINES` lines of at most `MAX_LINE_CHARS` characters each, duplicates
(a WARN repeated fifty times) kept once, in paste order. Redaction is the caller's next
step (`kb.loop.text.redact`), applied to these lines before anything is shown or stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.engine.lineclass import is_errorish, is_infoish
from kb.engine.normalise import (
    CAUSED_BY,
    EXCEPTION,
    FRAME,
    LineInfo,
    Normalised,
    normalise,
    prefix_info,
)

__all__ = [
    "FALLBACK_LINES",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "ErrorLine",
    "clip_line",
    "error_lines",
    "find_error_lines",
]

MAX_LINES = 20
MAX_LINE_CHARS = 500
#: A paste where no line looks like an error (a message pasted bare, without a class or an
#: error word) still has something to report: its first lines that are not noise.
FALLBACK_LINES = 3

_ERROR_LEVELS = frozenset(("WARN", "ERROR", "FATAL"))
_NOISE_LEVELS = frozenset(("TRACE", "DEBUG", "INFO"))
# Variant lines the normaliser adds that hold the message itself (a JSON log line's decoded
# message, an escaped line unescaped). Speculative joins of neighbouring lines do not.
_MESSAGE_VARIANTS = frozenset(("json", "unescaped"))

# Shell and REPL prompts: `user@host:~/dir$ cmd`, `$ cmd`, `# cmd`, `>>> x`, `PS C:\> x`,
# psql's `dev=> select`. Single-class runs with bounded counts (linear on any input).
_PROMPT = re.compile(
    r"[ \t]{0,8}(?:[\w.-]{1,64}@[\w.-]{1,64}:[^\s]{0,200}[#$%]|[$#%>][ \t]"
    r"|>>>|\.\.\.[ \t]|PS [A-Za-z]:\\[^>\n]{0,200}>|[\w-]{1,64}[=-]?[>#][ \t])"
)
_CAUSE_NUMBER = re.compile(r"[ \t]{0,16}\d{1,3}: ")


@dataclass(frozen=True, slots=True)
class ErrorLine:
    """One error line: its message text, what kind of line it is, where it was pasted."""

    text: str
    kind: str  # the normaliser's kind: "exception", "caused_by", "log" or "text"
    level: str | None  # "WARN" | "ERROR" | "FATAL" | None
    line: int  # 1-based line number in the paste
    exc_type: str | None = None  # the exception class the line starts with, if any


def error_lines(text: str) -> list[str]:
    """The message text of each error line of ``text`` (see `find_error_lines`)."""
    return [e.text for e in find_error_lines(text)]


def find_error_lines(text: str, *, clip: bool = True) -> list[ErrorLine]:
    """The error lines of a paste, prefixes removed, each once, in paste order.

    ``clip=False`` leaves each line whole: what will be stored must be redacted before it
    is cut (`clip_line`), or a secret that straddles the cut loses the shape redaction
    knows it by and its first part survives."""
    norm = normalise(text)
    out = _collect(norm, strict=True, limit=MAX_LINES, clip=clip)
    return out or _collect(norm, strict=False, limit=FALLBACK_LINES, clip=clip)


def clip_line(text: str) -> str:
    """``text`` cut to `MAX_LINE_CHARS`, the cut marked."""
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"


def _collect(norm: Normalised, *, strict: bool, limit: int, clip: bool) -> list[ErrorLine]:
    lines = norm.lines
    replaced = _envelopes(lines)
    out: list[ErrorLine] = []
    seen: set[str] = set()
    for i, info in enumerate(lines):
        if i in replaced or info.kind == FRAME:
            continue
        if info.derived is not None and info.derived not in _MESSAGE_VARIANTS:
            continue
        found = _error_line(norm, info, strict=strict, clip=clip)
        if found is None or found.text in seen:
            continue
        seen.add(found.text)
        out.append(found)
        if len(out) >= limit:
            break
    return out


def _envelopes(lines: list[LineInfo]) -> set[int]:
    """Pasted lines whose message the normaliser decoded into a variant line after them
    (a JSON log line): the variant is kept, the envelope dropped."""
    out: set[int] = set()
    last_pasted = -1
    for i, info in enumerate(lines):
        if info.derived is None:
            last_pasted = i
        elif info.derived in _MESSAGE_VARIANTS and last_pasted >= 0:
            src = lines[last_pasted]
            if src.orig_start <= info.orig_start and info.orig_end <= src.orig_end:
                out.add(last_pasted)
    return out


def _error_line(norm: Normalised, info: LineInfo, *, strict: bool, clip: bool) -> ErrorLine | None:
    if info.level in _NOISE_LEVELS:
        return None
    whole = norm.text[info.start : info.end]
    line_start = norm.original.rfind("\n", 0, info.orig_start) + 1  # before quote markers
    pasted = norm.original[line_start : info.orig_end]
    if not whole.strip() or _PROMPT.match(whole) or _PROMPT.match(pasted):
        return None
    body = _message(norm, info)
    if not body or (len(body.split()) < 2 and info.exc_type is None):
        return None  # "ERROR is", one item of a listing
    if not strict or info.kind in (EXCEPTION, CAUSED_BY) or info.level in _ERROR_LEVELS:
        pass
    elif info.level is not None or not is_errorish(body) or is_infoish(whole):
        return None
    if clip:
        body = clip_line(body)
    level = info.level if info.level in _ERROR_LEVELS else None
    return ErrorLine(body, info.kind, level, info.line, info.exc_type)


def _message(norm: Normalised, info: LineInfo) -> str:
    """The line without its log prefix (timestamp, level, module) and cause number; an
    exception's class is part of the message and stays."""
    start = info.start
    if info.kind not in (EXCEPTION, CAUSED_BY):
        start = info.body_start
    else:
        start += prefix_info(norm.text[info.start : info.end])[0]
    body = norm.text[start : info.end]
    m = _CAUSE_NUMBER.match(body)
    if m:
        body = body[m.end() :]
    return body.strip().strip("`").strip()
