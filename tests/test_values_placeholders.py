"""A value that is a format placeholder was read from source code, never from the user's
log: ``kb.matching.values`` does not show it as theirs."""

from __future__ import annotations

import pytest

from kb.matching.values import fill_message, is_placeholder


@pytest.mark.parametrize("value", ["%s", "'%s'", "{}", "{alias}", "%(name)s", '"{0}"', "%d"])
def test_placeholders_are_not_values(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize("value", ["upper_first", "'x1'", "42", "{", "%", "a {} b"])
def test_values_are_values(value: str) -> None:
    assert not is_placeholder(value)


def test_a_placeholder_capture_keeps_the_templates_token_and_is_not_listed() -> None:
    filled = fill_message("alias = {alias}, filter {}", ["{alias}", "upper_first"])
    assert [v.value for v in filled.values] == ["upper_first"]
    shown = "".join(p.text for p in filled.pieces)
    assert shown == "alias = {alias}, filter upper_first"
    assert [p.text for p in filled.pieces if p.value] == ["upper_first"]


def test_only_placeholders_fill_nothing() -> None:
    filled = fill_message("Invalid filter: '%s'", ["%s"])
    assert filled.values == ()
    assert not filled.filled
