"""Context-free classification of one logical line: kind, level, where the message starts.

Used lazily (only for lines the matcher asks about) and by the structure pass. Context that
one line cannot show (which of a chained traceback's exceptions is the last one, the message
line under a Rust `panicked at` header) is recorded by the structure pass as marks instead.
"""

from __future__ import annotations

import re

from ._prefix import canonical_level, prefix_info

# Kinds a line can have.
TEXT = "text"  # nothing recognised
LOG = "log"  # a log line with a timestamp/level/module prefix
EXCEPTION = "exception"  # the (primary) error: last exception of a traceback, panic message
CAUSED_BY = "caused_by"  # a cause or earlier chained exception
FRAME = "frame"  # stack frames and traceback boilerplate: not an error message itself

_FRAME_RE = re.compile(
    r"[ \t]+at [\w$.<>/\[\]-]+\("  # Java frame
    r"|[ \t]*\.\.\. \d+ (?:more|common frames omitted)"
    r'|[ \t]+File "[^"\n]*", line \d+'  # Python frame
    r"|[ \t]*[\^~]{3,}[ \t]*$"  # Python 3.11+ caret lines
    r"|Traceback \(most recent call last\):"
    r"|During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception"
    r"|goroutine \d+ \[[^\]\n]*\]:"
    r"|[ \t]+/\S+\.go:\d+"  # Go frame location
    r"|[ \t]+\d+: (?:<|[\w]+::)"  # Rust backtrace frame
    r"|[ \t]+at \S+:\d+:\d+[ \t]*$"  # Rust backtrace location
    r"|stack backtrace:|note: run with `RUST_BACKTRACE"
)
# "a.b.FooError: msg", "FooException: msg", "java.lang.IllegalStateException" (alone)
_EXC_RE = re.compile(
    r"(?P<cls>(?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*"
    r"|[A-Z][\w$]*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure|Panic))"
    r"(?::[ \t]*|[ \t]*$)"
)
_CAUSED_RE = re.compile(r"[ \t]*Caused by:[ \t]*")
_THREAD_EXC_RE = re.compile(r'Exception in thread "[^"\n]*"[ \t]+')
_PANIC_RE = re.compile(r"panic:[ \t]+")
_RUST_PANIC_RE = re.compile(r"thread '[^'\n]*' panicked at (?:'(?=.*', \S+:\d+))?")
_ERROR_RE = re.compile(r"(?:Error|error|ERROR|fatal error|FATAL)(?: \[\w+\])?:[ \t]+")
_NUMBERED_RE = re.compile(r"[ \t]*\d+: ")
_JSON_LEVEL_RE = re.compile(
    r'"(?:level|levelname|severity|lvl|log\.level)"\s*:\s*"(?P<lvl>[A-Za-z]+)"', re.I
)


def exception_class(rest: str) -> tuple[int, str | None]:
    """If ``rest`` starts with an exception class ("a.b.Foo: "), its length and name."""
    m = _EXC_RE.match(rest)
    if m is None:
        return 0, None
    return m.end(), m.group("cls")


def classify(
    line: str, prefix: tuple[int, str | None] | None = None
) -> tuple[str, str | None, int, str | None]:
    """(kind, level, offset of the message body in ``line``, exception class or None)."""
    try:
        return _classify(line, prefix)
    except Exception:  # pragma: no cover - defensive
        return TEXT, None, 0, None


def _classify(
    line: str, prefix: tuple[int, str | None] | None = None
) -> tuple[str, str | None, int, str | None]:
    pl, level = prefix_info(line) if prefix is None else prefix
    if level is None and line.lstrip().startswith("{"):
        m = _JSON_LEVEL_RE.search(line, 0, 400)
        if m:
            level = canonical_level(m.group("lvl"))
    rest = line[pl:]
    if _FRAME_RE.match(rest):
        return FRAME, level, pl, None
    m = _CAUSED_RE.match(rest)
    if m:
        n, cls = exception_class(rest[m.end() :])
        return CAUSED_BY, level, pl + m.end() + n, cls
    m = _THREAD_EXC_RE.match(rest)
    if m:
        n, cls = exception_class(rest[m.end() :])
        return EXCEPTION, level, pl + m.end() + n, cls
    m = _PANIC_RE.match(rest) or _RUST_PANIC_RE.match(rest)
    if m:
        return EXCEPTION, level, pl + m.end(), None
    n, cls = exception_class(rest)
    if cls is not None and (n < len(rest) or "." in cls):
        return EXCEPTION, level, pl + n, cls
    m = _ERROR_RE.match(rest)
    if m and not pl:
        return EXCEPTION, level, m.end(), None
    return (LOG if pl else TEXT), level, pl, None


def numbered_body(line: str) -> int:
    """Offset after an anyhow/eyre cause number ("  1: ") or 0."""
    m = _NUMBERED_RE.match(line)
    return m.end() if m else 0
