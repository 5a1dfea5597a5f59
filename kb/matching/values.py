"""A record's message with the paste's own values filled in, each labelled with its name.

A result card is read by someone looking at their own log: ``Invalid column: cache_size``
says more to them than ``Invalid column: {column_name}``, and ``column_name = cache_size``
tells them which part of their line the code is talking about. The record's template stays
the source of truth (the card keeps it one click away); this module only lines the
captures up with it.

The captures line up with the template's placeholders one for one (the dataset's patterns
are the message with each placeholder replaced by one group), except where the matcher
merges adjacent placeholders into one group. So values are filled in only when the counts
agree: a title that put a value under the wrong placeholder would be worse than the
template. Placeholders are found by ``kb.records.validation.PLACEHOLDER_RE``, the one definition
of what a placeholder is in the dataset's languages.

A placeholder's name is the one the template gives it (``{column_name}``,
``%(name)s``, ``{self.table!r}``). Positional ones (``{}``, ``%s``) take the names of
the arguments the code passes to the message (``kb.explain``'s values) when every
positional placeholder has exactly one argument that is a plain name; otherwise they
stay unnamed rather than guessed.

A capture that is itself a format placeholder (``%s``, ``{}``, ``{alias}``,
``%(name)s``, quoted or not) is no value of the user's: it was read from source code (a
traceback quoting the ``raise`` line, a log of the format string), so it is not shown as
one, and the title keeps the template's own placeholder there.

Everything here is plain text from the paste or the record: the template escapes it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kb.records.validation import PLACEHOLDER_RE

# Placeholder tokens that stand for a literal character, not a value.
_LITERAL = {"{{": "{", "}}": "}", "%n": "\n"}
# A name a reader can use: ``column_name``, ``self.table``, ``obj.__class__.__name__``.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,4}")
_PERCENT_NAME = re.compile(r"%\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of the filled message: template text, or (``value``) text from the paste."""

    text: str
    value: bool = False


@dataclass(frozen=True, slots=True)
class Value:
    name: str  # "" when neither the template nor the code names it
    value: str


@dataclass(frozen=True, slots=True)
class FilledMessage:
    pieces: tuple[Piece, ...]  # empty when the values could not be lined up
    values: tuple[Value, ...]  # every capture, in order, named where possible

    @property
    def filled(self) -> bool:
        return bool(self.pieces)


def placeholder_name(token: str) -> str | None:
    """The name a placeholder token gives its value; ``None`` for a positional one."""
    named = _PERCENT_NAME.match(token)
    if named:
        return named.group(1)
    if not token.startswith("{"):
        return None
    inner = re.split(r"[:!]", token[1:-1], maxsplit=1)[0].strip()
    return inner if _NAME.fullmatch(inner) else None


def _split(message: str) -> tuple[list[str], list[str | None]]:
    """The template's literal runs around its placeholders, and each placeholder's name."""
    literals: list[str] = []
    names: list[str | None] = []
    buf: list[str] = []
    pos = 0
    for m in PLACEHOLDER_RE.finditer(message):
        buf.append(message[pos : m.start()])
        pos = m.end()
        token = m.group(0)
        if token in _LITERAL:
            buf.append(_LITERAL[token])
            continue
        literals.append("".join(buf))
        buf = []
        names.append(placeholder_name(token))
    buf.append(message[pos:])
    literals.append("".join(buf))
    return literals, names


def _code_names(names: list[str | None], code_values: Sequence[str]) -> list[str | None]:
    """Positional placeholders named after the code's arguments, when they line up."""
    positional = [i for i, n in enumerate(names) if n is None]
    if not positional or len(code_values) != len(positional):
        return names
    if not all(_NAME.fullmatch(v) for v in code_values):
        return names
    out = list(names)
    for index, value in zip(positional, code_values, strict=True):
        out[index] = value
    return out


_QUOTES = "'\"`"


def is_placeholder(value: str) -> bool:
    """Whether a captured value is a format placeholder rather than a value."""
    bare = value.strip().strip(_QUOTES).strip()
    return bool(bare) and PLACEHOLDER_RE.fullmatch(bare) is not None and bare not in _LITERAL


def fill_message(
    message: str, captures: Sequence[str], code_values: Sequence[str] = ()
) -> FilledMessage:
    """``message`` with ``captures`` in place of its placeholders, when they line up."""
    literals, names = _split(message)
    if len(names) != len(captures):
        return FilledMessage((), tuple(Value("", c) for c in captures if not is_placeholder(c)))
    names = _code_names(names, code_values)
    slots = [(Value(n or "", c), is_placeholder(c)) for n, c in zip(names, captures, strict=True)]
    values = tuple(v for v, code in slots if not code)
    if not values:
        return FilledMessage((), ())
    tokens = [m.group(0) for m in PLACEHOLDER_RE.finditer(message) if m.group(0) not in _LITERAL]
    pieces: list[Piece] = []
    for i, literal in enumerate(literals):
        if literal:
            pieces.append(Piece(literal))
        if i < len(slots):
            value, code = slots[i]
            pieces.append(Piece(tokens[i]) if code else Piece(value.value, value=True))
    return FilledMessage(tuple(pieces), values)
