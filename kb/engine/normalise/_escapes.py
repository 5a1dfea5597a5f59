"""Escaped strings inside log lines: JSON string values, `\\"`-quoted Debug/repr output.

`decode_escapes` turns the raw characters of an escaped string into lines of *pieces*
``(replacement or None, start, end)`` over the source text, so every decoded character maps
back to the escape sequence it came from. The regexes find a JSON log line's message-like
values (``msg``, ``message``, ``error``, ``exc_info``, ...) without parsing the whole line.
"""

from __future__ import annotations

import re

Piece = tuple[str | None, int, int]  # (replacement text or None = copy src[s:e], s, e)

# "key": "value" inside a JSON object (value without raw newlines)
JSON_PAIR_RE = re.compile(r'"([\w.@$-]{1,64})"\s*:\s*"((?:[^"\\\n]|\\.)*)"')
MESSAGE_KEYS = frozenset(
    {
        "msg",
        "message",
        "error",
        "err",
        "errormessage",
        "error_message",
        "errorverbose",
        "exc_info",
        "exception",
        "exc_text",
        "stack",
        "stacktrace",
        "stack_trace",
        "trace",
        "reason",
        "detail",
        "details",
        "description",
        "log",
        "text",
        "event",
        "cause",
        "fields.error",
    }
)
SKIP_KEYS = frozenset(
    {"ts", "time", "timestamp", "@timestamp", "asctime", "level", "levelname", "severity"}
)
QUIET_LEVELS = frozenset({"TRACE", "DEBUG", "INFO"})
JSON_LEVEL_RE = re.compile(
    r'"(?:level|levelname|severity|lvl|log\.level)"\s*:\s*"(?P<lvl>[A-Za-z]+)"', re.I
)
# "msg": "...", "error": "...", "errorVerbose": "...", "exc_info": "..." at any depth
JSON_MESSAGE_PAIR_RE = re.compile(
    r'"((?:[\w.@-]*?(?:[Ee]rr(?:or)?|ERROR|[Mm]essage|MESSAGE|[Mm]sg|MSG|[Ee]xception)'
    r"(?:[Vv]erbose|_?[Mm]essage|_?[Mm]sg)?)"
    r"|exc_info|exc_text|stack|stacktrace|stack_trace|reason|detail|details|description"
    r'|log|text|event|cause)"\s*:\s*"((?:[^"\\\n]|\\.)*)"'
)
_ESC_RE = re.compile(r"\\(?:u([0-9a-fA-F]{4})(?:\\u([0-9a-fA-F]{4}))?|x([0-9a-fA-F]{2})|(.))", re.S)
_SIMPLE_ESC = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "'": "'",
    "n": "\n",
    "t": "\t",
    "r": "",
    "b": "",
    "f": "",
    "0": "",
}
_CSI_TAIL_RE = re.compile(r"\[[0-?]*[ -/]*[@-~]")


def decode_escapes(src: str, s: int, e: int) -> list[list[Piece]]:
    """Decode backslash escapes in ``src[s:e]`` into lines of pieces (split at ``\\n``).

    Each decoded character maps to its escape sequence; an ESC decoded from ``\\u001b``
    swallows the CSI colour sequence that follows it.
    """
    lines: list[list[Piece]] = [[]]
    cur = lines[0]
    pos = s
    for m in _ESC_RE.finditer(src, s, e):
        ms, me = m.span()
        if ms < pos:
            continue
        if ms > pos:
            cur.append((None, pos, ms))
        u1, u2, x, c = m.groups()
        ch: str | None
        if u1 is not None:
            cp = int(u1, 16)
            if u2 is not None:
                cp2 = int(u2, 16)
                if 0xD800 <= cp < 0xDC00 and 0xDC00 <= cp2 < 0xE000:
                    ch = chr(0x10000 + ((cp - 0xD800) << 10) + (cp2 - 0xDC00))
                else:
                    me = m.start(2) - 2  # only the first \uXXXX
                    ch = None if 0xD800 <= cp < 0xE000 else chr(cp)
            else:
                ch = None if 0xD800 <= cp < 0xE000 else chr(cp)
        elif x is not None:
            ch = chr(int(x, 16))
        else:
            ch = _SIMPLE_ESC.get(c)
        if ch == "\x1b":
            t = _CSI_TAIL_RE.match(src, me, e)
            if t:
                me = t.end()
            ch = ""
        elif ch is not None and len(ch) == 1 and (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0):
            ch = "\n" if ch in "\n\r" else ("\t" if ch == "\t" else "")
        if ch is None:
            cur.append((None, ms, me))
        elif ch == "\n":
            cur = []
            lines.append(cur)
        elif ch:
            cur.append((ch, ms, me))
        pos = me
    if pos < e:
        cur.append((None, pos, e))
    return [line for line in lines if line]
