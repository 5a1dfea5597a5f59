"""Bytes to JSON values, one line at a time, never holding an over-long line whole.

Every way a line can be broken ends as a ``FieldError`` with a reason (invalid UTF-8,
NaN/Infinity, duplicate keys, integers past Python's 4300-digit limit, nesting too deep),
so the importer reports it by line number instead of raising. The decoder is Python's
``json`` with hooks for duplicate keys and NaN: one decoder, so every line is judged by
the same rules, whatever it holds.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from typing import IO, Any, cast

from kb.http import GZIP_MAGIC
from kb.records.schema import FieldError

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


def decompressed(stream: IO[bytes]) -> IO[bytes]:
    """``stream`` as JSONL bytes: decompressed when it starts with gzip's magic bytes.

    The one gzip rule of every way into the importer (the command's files and stdin, the
    admin's uploads): the content decides, never the file's name, so a renamed file or
    a pipe reads the same. Nothing is consumed: the head is peeked (or read and sought
    back); a stream that can do neither is buffered first."""
    if hasattr(stream, "peek"):
        head = stream.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)]
    elif stream.seekable():
        at = stream.tell()
        head = stream.read(len(GZIP_MAGIC))
        stream.seek(at)
    else:
        buffered = io.BufferedReader(cast(Any, stream))
        head = buffered.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)]
        stream = buffered
    if head == GZIP_MAGIC:
        return cast(IO[bytes], gzip.GzipFile(fileobj=stream))
    return stream
