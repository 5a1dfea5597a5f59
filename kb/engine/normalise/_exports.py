"""Log-service exports: one JSON object per line, the logged text nested in it, escaped.

Why this is an envelope and not a JSON log line (`_json_lines.py`): in a CloudWatch or
Cloud Logging export the JSON is the *service's*, not the application's; the message value
holds the whole line the application wrote -- its own prefix, level, even its own JSON
record -- and a multi-line event holds its line breaks as ``\\n``. Decoding it as a variant
next to the raw object would leave the raw object first in the text, where a pattern with
a trailing placeholder reads on into the service's keys. So the object is replaced by the
decoded message: every decoded character maps to its escape sequence, the keys around it
map to nothing, and the lines go on through the rest of the normaliser as if pasted.

Only an object with an export's shape is taken (parsed with `json.loads`, keys from the
service's set), so an application's own JSON lines are left to `_json_lines.py`.
"""

from __future__ import annotations

import json
import re

from ._clean import lines_opening
from ._escapes import decode_escapes
from ._mapping import Builder, Layer

# line starts that can open an export object (the services' own first keys)
EXPORT_START = (
    r'\{"(?:timestamp|ingestionTime|logStreamName|logGroupName|eventId|insertId|textPayload'
    r'|jsonPayload|logName|resource|severity|receiveTimestamp)"'
)
_START_RE = re.compile(EXPORT_START)
_CLOUDWATCH_KEYS = frozenset(
    {"timestamp", "message", "ingestionTime", "logStreamName", "logGroupName", "eventId", "id"}
)
_CLOUD_LOGGING_KEYS = frozenset(
    {
        "insertId",
        "textPayload",
        "jsonPayload",
        "resource",
        "severity",
        "timestamp",
        "receiveTimestamp",
        "logName",
        "labels",
        "trace",
        "spanId",
        "traceSampled",
        "sourceLocation",
        "httpRequest",
        "operation",
    }
)
_VALUE_RE = {
    key: re.compile(rf'"{key}"\s*:\s*"((?:[^"\\\n]|\\.)*)"') for key in ("message", "textPayload")
}
MAX_EXPORT_LINE = 1 << 20  # a longer line is not parsed (linear-time guard)


def _value_key(obj: object) -> tuple[str, str] | None:
    """(export name, key of the nested message) when ``obj`` has an export's shape."""
    if not isinstance(obj, dict) or not obj:
        return None
    keys = obj.keys()
    if "message" in obj and isinstance(obj["message"], str) and keys <= _CLOUDWATCH_KEYS:
        return "CloudWatch export", "message"
    if keys <= _CLOUD_LOGGING_KEYS:
        if isinstance(obj.get("textPayload"), str):
            return "Cloud Logging export", "textPayload"
        payload = obj.get("jsonPayload")
        if isinstance(payload, dict) and isinstance(payload.get("message"), str):
            return "Cloud Logging export", "message"
    return None


def unwrap_exports(src: str) -> tuple[str, Layer | None, dict[str, int]]:
    """Replace export objects by their decoded messages: (text, layer or None, counts)."""
    counts: dict[str, int] = {}
    if "{" not in src:
        return src, None, counts
    b: Builder | None = None
    pos = 0
    n = len(src)
    for ls, _end in lines_opening(src, '{"'):  # found with str.find, not tried everywhere
        if ls < pos or _START_RE.match(src, ls) is None:
            continue
        le = src.find("\n", ls)
        le = n if le < 0 else le
        if le - ls > MAX_EXPORT_LINE:
            continue
        try:
            obj = json.loads(src[ls:le])
        except ValueError:
            continue
        got = _value_key(obj)
        if got is None:
            continue
        name, key = got
        vm = _VALUE_RE[key].search(src, ls, le)
        if vm is None:
            continue
        if b is None:
            b = Builder()
        b.copy(src, pos, ls)
        prev_end = None
        for pieces in decode_escapes(src, vm.start(1), vm.end(1)):
            if prev_end is not None:
                b.emit("\n", prev_end, pieces[0][1])  # a decoded line break
            for text, s, e in pieces:
                if text is None:
                    b.copy(src, s, e)
                else:
                    b.emit(text, s, e)
            prev_end = pieces[-1][2]
        pos = le
        counts[name] = counts.get(name, 0) + 1
    if b is None:
        return src, None, counts
    b.copy(src, pos, n)
    out, layer = b.finish(n)
    return out, layer, counts
