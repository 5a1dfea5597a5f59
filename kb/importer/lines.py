"""Bytes to JSON values, one line at a time, never holding an over-long line whole.

Every way a line can be broken ends as a ``FieldError`` with a reason (invalid UTF-8,
NaN/Infinity, duplicate keys, integers past Python's 4300-digit limit, nesting too deep),
so the importer reports it by line number instead of raising.

The decoder is Python's ``json`` with hooks (duplicate keys, NaN). ``fast_decode`` (orjson,
where installed; about four times faster) is the importer's first try for a line without
``\\u`` escapes, and its value is only used where it provably equals ``decode_line``'s:
- orjson refuses NaN/Infinity, invalid UTF-8, a BOM, raw control characters, nesting past
  1,024, numbers beyond a double, malformed JSON: ``None``, the caller uses ``decode_line``,
  which gives the reason as before;
- orjson keeps the last of duplicate keys silently: a value is returned only if orjson's
  compact re-encoding has as many ``:`` as the line. Without ``\\u`` escapes a colon in a
  line is either a key's separator or a colon inside a string (written as itself), and
  both come back from the re-encoding; a dropped duplicate key loses at least one;
- orjson reads an integer beyond 64 bits as a float, which ``decode_line`` would not: the
  caller must use the value only through ``kb.schema.parse_plain_record`` (which passes
  exact ``int`` only and looks at nothing but the known fields) and fall back to
  ``decode_line`` otherwise;
- a line with a ``\\u`` escape (the only way to a NUL, a lone surrogate, or a colon not
  written as itself) must not be given to ``fast_decode``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kb.schema import FieldError

try:  # optional: the strict decoder alone gives the same values, more slowly
    import orjson
except ImportError:  # pragma: no cover
    orjson = None

MAX_LINE_BYTES = 4 * 1024 * 1024
BOM = b"\xef\xbb\xbf"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return obj


_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)


def fast_decode(raw: bytes) -> Any:
    """orjson's value of ``raw`` under the conditions of the module docstring, or ``None``
    (then use ``decode_line``). ``raw`` must hold no ``\\u`` escape."""
    if orjson is None:
        return None
    try:
        value = orjson.loads(raw)
        if raw.count(b":") != orjson.dumps(value).count(b":"):
            return None  # a duplicate key, dropped by orjson
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return value


def decode_line(raw: bytes, number: int) -> Any:
    """Bytes of one line to a JSON value; ``FieldError`` with a reason otherwise."""
    if number == 1 and raw.startswith(BOM):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FieldError("-", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        return _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise FieldError("-", f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # duplicate keys, NaN/Infinity, > 4300-digit integers
        raise FieldError("-", f"invalid JSON: {exc}") from None
    except RecursionError:
        raise FieldError("-", "invalid JSON: nested too deeply") from None


def read_lines(stream: Any, max_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Lines of a binary stream; ``None`` for a line longer than ``max_bytes`` (skipped
    without ever holding it whole in memory)."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # drain the rest of the over-long line
                rest = stream.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line
