"""The importer's fast JSON path (orjson) gives exactly the strict decoder's value or
nothing: every line it takes decodes to the same value with the same types (but integers
beyond 64 bits, which only ``parse_plain_record`` may see: they do not pass it), and every
line the strict decoder refuses (duplicate keys, NaN, bad UTF-8, ...) is left to the strict
decoder, which names the reason."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.importer import lines as lines_module
from kb.importer.lines import decode_line
from kb.schema import FieldError

pytestmark = pytest.mark.skipif(lines_module.orjson is None, reason="orjson not installed")


def _strict(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        return ("ok", lines_module._decoder.decode(text))
    except (ValueError, RecursionError):
        return ("refused",)


def _typed(value: Any) -> Any:
    """``value`` with the type of every leaf, so 1 and 1.0 (and True) differ."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, value)


def _agrees(raw: bytes) -> None:
    fast = lines_module.fast_decode(raw)
    strict = _strict(raw)
    if fast is None:
        return  # left to the strict decoder
    assert strict[0] == "ok", raw
    assert _typed(fast) == _typed(strict[1]), raw


TRICKY = [
    b'{"a":1,"a":2}',
    b'{"a":"x:y","a":1}',
    b'{"a":{"b":1,"b":1}}',
    b'[{"k":1},{"k":2,"k":3}]',
    b'{"a":NaN}',
    b'{"a":-Infinity}',
    b'{"a":1e400}',
    b'{"a":999999999999999999}',
    b'{"a":"\xff"}',
    b'\xef\xbb\xbf{"a":1}',
    b'{"a":"x\ty"}',
    b"[" * 1100 + b"]" * 1100,
    b'{"a":01}',
    b'{"a":1,}',
    b'{"a":"\\/:"}',
    b'{"a:b":"c:d","e":["f:g"]}',
    b'{"a":0.1,"b":5e-324,"c":1E2,"d":-0.0,"e":-0}',
    b'{"a":true,"b":false,"c":null}',
    b"null",
    b'"just a string"',
    b'{"a":1} trailing',
    b' {"a":1}\r\n',
]


@pytest.mark.parametrize("raw", TRICKY)
def test_tricky_lines(raw: bytes) -> None:
    _agrees(raw)


def test_duplicate_keys_are_never_taken() -> None:
    for raw in TRICKY[:4]:
        assert lines_module.fast_decode(raw) is None, raw


def test_decode_line_reports_what_it_reported_before() -> None:
    with pytest.raises(FieldError, match="duplicate key 'a'"):
        decode_line(b'{"a":1,"a":2}\n', 5)
    with pytest.raises(FieldError, match="NaN is not valid JSON"):
        decode_line(b'{"a":NaN}\n', 5)
    huge = decode_line(b'{"a":123456789012345678901234567890}', 5)
    assert huge == {"a": 123456789012345678901234567890}
    assert type(huge["a"]) is int


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**18) + 1, max_value=10**18 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_any_json_is_decoded_alike(value: Any, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if b"\\u" not in raw:
        _agrees(raw)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=4), st.data())
def test_a_repeated_key_is_never_taken(obj: dict, data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(obj)))
    body = json.dumps(obj, ensure_ascii=False)[1:-1]
    raw = ("{" + body + ", " + json.dumps(key, ensure_ascii=False) + ": 0}").encode()
    if b"\\u" not in raw:
        assert lines_module.fast_decode(raw) is None


@pytest.mark.django_db
def test_integers_beyond_64_bits_are_judged_as_before() -> None:
    from kb.models import ErrorRecord
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
