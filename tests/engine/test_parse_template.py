"""``parse_template`` (a regex tokenizer) gives exactly what the per-character parser it
replaced gave, kept here as the reference: for every pattern of the dataset, for every
escaped character, and for generated patterns built from the syntax that matters.

``HYPOTHESIS_PROFILE=long`` runs 20,000 examples per property instead of 1,000.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kb.engine.patterns import Piece, analyse, parse_template
from tests.engine.conftest import needs_data

_PROFILE = "long" if os.environ.get("HYPOTHESIS_PROFILE") in {"long", "fuzz"} else "default"
PROPS = settings(
    max_examples=20_000 if _PROFILE == "long" else 1_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# --- the reference: the character-by-character parser as it was -------------------------
PLACEHOLDER = "(.+?)"
_META = set(".^$*+?{}[]|()")
_HEX_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")


def reference_parse_template(pattern: str) -> list[Piece] | None:
    pieces: list[Piece] = []
    buf: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith(PLACEHOLDER, i):
            if buf:
                pieces.append(Piece("".join(buf)))
                buf = []
            if not pieces or pieces[-1].text is not None:
                pieces.append(Piece(None))
            i += len(PLACEHOLDER)
            continue
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            d = pattern[i + 1]
            if d == "n":
                buf.append("\n")
            elif d == "t":
                buf.append("\t")
            elif d in "ux" and _HEX_ESCAPE.match(pattern, i):  # \u00e9, \x41: a literal
                esc = _HEX_ESCAPE.match(pattern, i)
                assert esc is not None
                buf.append(chr(int(esc.group(1) or esc.group(2), 16)))
                i = esc.end()
                continue
            elif d.isalnum() or d == "_":
                return None  # \d, \w, \b, \u..., backrefs: real regex syntax
            else:
                buf.append(d)
            i += 2
            continue
        if c in _META:
            return None
        buf.append(c)
        i += 1
    if buf:
        pieces.append(Piece("".join(buf)))
    return pieces


# --- generated patterns ------------------------------------------------------------------
# Fragments chosen to hit every branch of both parsers, glued with arbitrary text.
FRAGMENTS = st.sampled_from(
    [
        "(.+?)",
        "(.+?)(.+?)",
        "(.+?",
        "(.+)",
        "(",
        ")",
        "\\",
        "\\\\",
        "\\.",
        "\\(",
        "\\)",
        "\\n",
        "\\t",
        "\\r",
        "\\d",
        "\\_",
        "\\1",
        "\\é",
        "\\²",
        "\\ ",
        "\\\n",
        "\\u00e9",
        "\\u00E9",
        "\\u12",
        "\\u12g4",
        "\\x41",
        "\\x4",
        "\\xZZ",
        "\\U0001F600",
        "\\N{DASH}",
        "\\\ud800",
        "\ud800",
        ".",
        "^",
        "$",
        "*",
        "+",
        "?",
        "{",
        "}",
        "[",
        "]",
        "|",
        " ",
        "\n",
        "\x00",
        "é",
        "ß",
        "\u0661",
        "abc",
        "Error: ",
    ]
)
TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6)
PATTERNS = st.lists(st.one_of(FRAGMENTS, TEXT), max_size=12).map("".join)


@PROPS
@given(PATTERNS)
@example("")
@example("\\")
@example("(.+?)")
@example("a\\")
@example("\\u00e9\\x41(.+?)(.+?)b\\.c")
def test_same_as_reference_on_generated_patterns(pattern: str) -> None:
    assert parse_template(pattern) == reference_parse_template(pattern)


@PROPS
@given(st.text(max_size=40))
def test_same_as_reference_on_arbitrary_text(pattern: str) -> None:
    assert parse_template(pattern) == reference_parse_template(pattern)


def test_escape_class_is_isalnum_or_underscore_for_every_character() -> None:
    """The tokenizer takes ``\\`` + ``[^\\w]`` as an escaped literal; the reference took
    every ``d`` with neither ``d.isalnum()`` nor ``d == "_"``: the same set of characters."""
    non_word = re.compile(r"[^\w]")
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        assert (non_word.match(c) is not None) == (not (c.isalnum() or c == "_")), hex(code)


def test_same_as_reference_for_escaped_characters() -> None:
    """``\\`` before each of the first 0x3000 code points and a spread of the rest, alone
    and between literals and placeholders."""
    codes = [*range(0x3000), *range(0x3000, sys.maxunicode + 1, 97)]
    for code in codes:
        c = chr(code)
        for pattern in (f"\\{c}", f"a\\{c}(.+?)", f"(.+?)\\{c}b", f"x{c}y"):
            assert parse_template(pattern) == reference_parse_template(pattern), repr(pattern)


@pytest.mark.slow
@needs_data
def test_same_as_reference_on_every_dataset_pattern(records: list[dict]) -> None:
    templates = 0
    for record in records:
        for pattern in (record["messagePattern"], record["errorMessage"]):
            expected = reference_parse_template(pattern)
            assert parse_template(pattern) == expected, record["id"]
            templates += expected is not None
    assert templates > len(records)  # most patterns (and many messages) are templates


def test_examples() -> None:
    assert parse_template("Cannot read (.+?) of \\(undefined\\)\\.") == [
        Piece("Cannot read "),
        Piece(None),
        Piece(" of (undefined)."),
    ]
    assert parse_template("(.+?)(.+?)a\\nb\\u00e9\\x41") == [Piece(None), Piece("a\nbéA")]
    assert parse_template("\\d+ items") is None
    assert parse_template("a.b") is None
    assert parse_template("trailing \\") is None
    assert analyse("Cannot read (.+?) of undefined").template
