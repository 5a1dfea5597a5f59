"""tree-sitter for the extractors: one parser per grammar, queries compiled once.

A whole repository is thousands of files, so what is per file stays small: one parse and
one run of a compiled query, whose matching (predicates included) happens in C; the
extractor's Python code only sees the few nodes the query captured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Final

from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

__all__ = ["C_ESCAPES", "captures", "language", "matches", "parse", "query", "text"]

_local = threading.local()

#: The one-character string escapes Go and Python both took from C, and what each stands
#: for (each language adds its own, and its numeric forms, beside them).
C_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


@cache
def language(grammar: Callable[[], object]) -> Language:
    """The `Language` of a grammar module's ``language()`` capsule."""
    return Language(grammar())


@cache
def query(grammar: Callable[[], object], source: str) -> Query:
    """``source`` compiled once per grammar (compiling costs far more than running)."""
    return Query(language(grammar), source)


def parse(grammar: Callable[[], object], text: str | bytes) -> Tree:
    """The syntax tree of ``text``. Parsers are not shared between threads (a worker may
    learn two sources at once), so each thread keeps its own per grammar."""
    parsers: dict[int, Parser] = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(id(grammar))
    if parser is None:
        parser = parsers[id(grammar)] = Parser(language(grammar))
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return parser.parse(data)


def captures(compiled: Query, node: Node) -> dict[str, list[Node]]:
    """Every node the query captures under ``node``, by capture name."""
    return QueryCursor(compiled).captures(node)


def matches(
    compiled: Query, node: Node, *, max_start_depth: int | None = None
) -> list[tuple[int, dict[str, list[Node]]]]:
    """The query's matches under ``node``, in document order: (pattern index, captures).
    With ``max_start_depth`` no match starts deeper than that below ``node`` (a hostile
    file nested thousands deep would otherwise make the query's work grow with the square
    of its depth)."""
    cursor = QueryCursor(compiled)
    if max_start_depth is not None:
        cursor.set_max_start_depth(max_start_depth)
    return cursor.matches(node)


def text(node: Node | None, errors: str = "surrogatepass") -> str:
    """A node's source text (``""`` for none); ``errors`` is how bytes that are no UTF-8
    are decoded (``"replace"``: as U+FFFD)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors)
