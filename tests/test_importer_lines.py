"""Bytes to JSON (``kb.records.importer.lines``): the one strict decoder names why a line is
refused, keeps what Python's ``json`` keeps, and the one gzip rule reads a stream by its
content."""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.records.importer.lines import decode_line, decompressed, read_lines
from kb.records.schema import FieldError

REFUSED = [
    (b'{"a":1,"a":2}', "duplicate key 'a'"),
    (b'{"a":{"b":1,"b":1}}', "duplicate key 'b'"),
    (b'{"a":NaN}', "NaN is not valid JSON"),
    (b'{"a":-Infinity}', "-Infinity is not valid JSON"),
    (b'{"a":"\xff"}', "invalid UTF-8 at byte 6"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"a":01}', "invalid JSON"),
    (b'{"a":1,}', "invalid JSON"),
    (b'{"a":1} trailing', "invalid JSON: Extra data"),
    (b'{"a":"x\ty"}', "invalid JSON: Invalid control character"),
]


@pytest.mark.parametrize(("raw", "reason"), REFUSED)
def test_a_broken_line_is_refused_with_its_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(FieldError, match=reason) as caught:
        decode_line(raw, 5)
    assert caught.value.field == "-"


def test_a_bom_is_dropped_on_the_first_line_only() -> None:
    assert decode_line(b'\xef\xbb\xbf{"a":1}', 1) == {"a": 1}
    with pytest.raises(FieldError, match="invalid JSON"):
        decode_line(b'\xef\xbb\xbf{"a":1}', 2)


def test_integers_beyond_64_bits_stay_exact_integers() -> None:
    huge = decode_line(b'{"a":123456789012345678901234567890}', 5)
    assert huge == {"a": 123456789012345678901234567890}
    assert type(huge["a"]) is int


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.booleans())
def test_any_json_decodes_to_what_json_dumped(value: Any, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:  # a lone surrogate written raw: not UTF-8, refused
        with pytest.raises(FieldError, match="invalid UTF-8"):
            decode_line(raw, 2)
        return
    assert decode_line(raw, 2) == value


class _Pipe(io.RawIOBase):
    """A stream that can neither seek nor peek, as a pipe read through a raw file is."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


BODY = b'{"a": 1}\n{"b": 2}\n'


@pytest.mark.parametrize(
    "make",
    [io.BytesIO, lambda data: io.BufferedReader(io.BytesIO(data)), _Pipe],
    ids=["seekable", "peekable", "pipe"],
)
@pytest.mark.parametrize("zipped", [False, True])
def test_gzip_is_told_by_its_content_on_any_stream(make: Any, zipped: bool) -> None:
    stream = make(gzip.compress(BODY) if zipped else BODY)
    assert list(read_lines(decompressed(stream))) == BODY.splitlines(keepends=True)


@pytest.mark.django_db
def test_integers_beyond_64_bits_are_judged_by_their_field() -> None:
    from kb.records.models import ErrorRecord
    from tests.factories import import_lines, make_line

    huge = 123456789012345678901234567890
    in_field = make_line(lineNumber=huge)
    in_extra = make_line(newKey=[huge, -(2**64) - 1])
    report = import_lines(in_field, in_extra)
    assert [(e.line, e.field, e.message) for e in report.errors] == [
        (1, "lineNumber", "is out of range (0 to 2147483647)")
    ]
    stored = ErrorRecord.objects.get(pk=in_extra["record"]["id"])
    assert stored.extra == {"newKey": [huge, -(2**64) - 1]}
    assert type(stored.extra["newKey"][0]) is int
