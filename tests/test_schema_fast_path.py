"""``parse_record``'s fast path (every key present, no others, text known clean) accepts
exactly what the per-field checkers accept, and leaves every rejection to them, so a bad
line is named by the same field and message either way."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kb.schema import FIELDS, FieldError, _all_fields_valid, parse_record
from tests.factories import SEED, make_line

BAD_VALUES: list[Any] = [
    None,
    "",
    "   ",
    "x" * 1001,
    0,
    -1,
    32768,
    2**31,
    2**70,
    True,
    1.5,
    [],
    ["ok", 3],
    ["t" * 101],
    {},
    "2026-13-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "2026-09-11T21:06:21.487Z",
]


def _outcome(obj: Any, text_safe: bool) -> Any:
    try:
        return parse_record(obj, text_safe=text_safe)
    except FieldError as exc:
        return ("error", exc.field, exc.message)


def _variants() -> list[dict]:
    out = [make_line(), copy.deepcopy(SEED)]
    for field in FIELDS:
        for value in BAD_VALUES:
            line = make_line()
            line["record"][field.key] = value
            out.append(line)
        missing = make_line()
        del missing["record"][field.key]
        out.append(missing)
    extra = make_line()
    extra["record"]["newKey"] = {"nested": [1, 2.5, "x"]}
    out.append(extra)
    return out


@pytest.mark.parametrize("line", _variants())
def test_fast_path_agrees_with_the_field_checkers(line: dict) -> None:
    assert _outcome(line, text_safe=True) == _outcome(line, text_safe=False)


def test_a_good_record_takes_the_fast_path() -> None:
    line = make_line()
    fast = _all_fields_valid(line["record"])
    assert fast is not None
    assert parse_record(line, text_safe=True)[0] == {**fast, "extra": {}}
    assert parse_record(line, text_safe=False)[0] == {**fast, "extra": {}}
