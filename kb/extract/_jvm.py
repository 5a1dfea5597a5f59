"""What the Java and Scala extractors share: grammars, queries, string escapes, templates.

A message is built as a list of *variants* (a ``c ? "a" : "b"`` argument, or a variable
assigned in two branches, gives two), each a tuple of parts: a ``str`` is literal text and
`HOLE` a non-literal part of a concatenation, written ``{}`` in the template.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Final

from tree_sitter import Language, Node, Parser, Query, QueryCursor

__all__ = [
    "HOLE",
    "MAX_NESTING",
    "MIN_LITERAL",
    "Part",
    "Variant",
    "concat",
    "decode_escapes",
    "language",
    "literal_length",
    "matches",
    "operands",
    "parse",
    "template_of",
    "text",
]


class _Hole:
    """A non-literal part of a concatenation (one object, compared by identity)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "HOLE"


HOLE: Final = _Hole()
Part = str | _Hole
Variant = tuple[Part, ...]

#: The dataset leaves out messages with fewer literal characters than this: ``"{}"`` or
#: ``"Error: " + e`` are nothing a reader can look up.
MIN_LITERAL = 8
#: A message built from more alternatives than this (nested conditionals, a variable
#: assigned in many branches) is cut: the first ones are kept, the rest add nothing a
#: person would paste that the first ones do not show.
MAX_VARIANTS = 8
#: How deep a message expression is read (parentheses, conditionals, calls, variables):
#: past it the part is a hole, so hostile nesting cannot exhaust Python's stack.
MAX_NESTING = 48

_ESCAPE = re.compile(r"\\(u+[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "s": " ",
    "0": "\0",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "\n": "",
}


def _unescape(match: re.Match[str]) -> str:
    body = match.group(1)
    if body[0] == "u":
        return chr(int(body.lstrip("u"), 16))
    if body[0] in "01234567":
        return chr(int(body, 8))
    return _SIMPLE_ESCAPES.get(body, body)


def decode_escapes(raw: str) -> str:
    """The characters a Java or Scala string literal's escapes stand for."""
    return _ESCAPE.sub(_unescape, raw) if "\\" in raw else raw


@cache
def language(name: str) -> Language:
    """The tree-sitter grammar of ``name`` ("java" or "scala")."""
    if name == "java":
        import tree_sitter_java

        return Language(tree_sitter_java.language())
    import tree_sitter_scala

    return Language(tree_sitter_scala.language())


@cache
def _parser(name: str) -> Parser:
    return Parser(language(name))


@cache
def _query(name: str, source: str) -> Query:
    return Query(language(name), source)


def parse(name: str, source: bytes) -> Node:
    """The root node of ``source`` parsed with the grammar ``name``."""
    return _parser(name).parse(source).root_node


def matches(name: str, query: str, node: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """The matches of ``query`` (compiled once per grammar) under ``node``."""
    return QueryCursor(_query(name, query)).matches(node)


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def concat(left: list[Variant], right: list[Variant]) -> list[Variant]:
    """Every variant of ``left`` followed by every variant of ``right`` (bounded)."""
    return [a + b for a in left for b in right][:MAX_VARIANTS]


def operands(node: Node, is_plus: Callable[[Node], bool]) -> list[Node]:
    """The operands of a ``+`` chain, left to right, read without recursion: a generated
    file may concatenate thousands of literals, nested as deep."""
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if is_plus(current):
            left = current.child_by_field_name("left")
            right = current.child_by_field_name("right")
            stack.extend(child for child in (right, left) if child is not None)
        else:
            found.append(current)
    return found


def template_of(variant: Variant) -> str:
    """The template of one variant: literal text as is, holes as ``{}`` (adjacent literal
    parts joined)."""
    return "".join("{}" if part is HOLE else part for part in variant)  # type: ignore[misc]


def literal_length(variant: Variant, placeholder: re.Pattern[str] | None) -> int:
    """How many characters of ``variant`` are literal text, not counting holes and, when
    the message is a format string, its ``placeholder`` matches."""
    literal = "".join(part for part in variant if isinstance(part, str))
    if placeholder is not None:
        literal = placeholder.sub("", literal)
    return len(literal)


def qualified_name(
    node: Node, scopes: dict[str, str], anonymous: Callable[[Node], bool] = lambda n: False
) -> str:
    """The dotted names of the named types and functions around ``node``, outermost first
    (``Outer.Inner.method``); ``scopes`` maps a node kind to the field holding its name."""
    names: list[str] = []
    current = node.parent
    while current is not None:
        field = scopes.get(current.type)
        if field is not None and not anonymous(current):
            name = current.child_by_field_name(field)
            if name is not None:
                names.append(text(name))
        current = current.parent
    return ".".join(reversed(names))


def dedent_text_block(raw: str) -> str:
    """A Java text block's content: the line after the opening quotes onwards, with the
    indentation common to its lines removed (as the compiler does)."""
    lines = raw.split("\n")[1:] if "\n" in raw else [raw]
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:].rstrip() for line in lines)


def unique(items: Iterable[str]) -> list[str]:
    """``items`` without repeats, first occurrence kept."""
    return list(dict.fromkeys(items))
