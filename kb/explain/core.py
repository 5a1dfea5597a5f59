"""The language-independent walk: parse the snippet, find the raise site, climb to the
condition and the enclosing function.

A snippet is a fragment of a file: it may start inside a function, or cut a string or a
block in half. tree-sitter parses fragments by recovery (``ERROR`` nodes around what it
could not place) and still builds ordinary nodes for the complete parts, so the walk only
ever trusts named nodes it meets on the way up from the site and reports whatever it
found: an explanation with no function, or no condition, is still useful, and ``None``
means nothing at all was found.

Cost is bounded by the snippet: one parse (linear in its size), one scan of the nodes
that overlap a few lines around the site, and one climb from the site to the root. Past
``MAX_SOURCE_CHARS`` a snippet is not explained at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser

from kb.explain.types import Condition, Explanation, clip

# Record snippets are a few dozen lines; anything far larger is not a snippet, and the
# explanation is skipped rather than parsed.
MAX_SOURCE_CHARS = 256 * 1024
# The message literal sits on the site line or just after it (``bail!(`` then the string
# on the next line); strings further away belong to other statements.
ROWS_BEFORE, ROWS_AFTER = 2, 6
MAX_VALUES = 6
MAX_CLOSERS = 64
# A condition is marked on at most this many lines: the rest of a long condition adds
# nothing to what the first lines show.
MAX_MARKED_ROWS = 3

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
# Placeholders of the message templates: {}, {name}, {:?}, %s, %(name)s, %w, {0}.
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([A-Za-z_]\w*\))?[-+ #0-9.]*[a-zA-Z]")


@dataclass(frozen=True, slots=True)
class Found:
    """A condition and the nodes whose lines show it (the condition, the arm's pattern)."""

    condition: Condition
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Grammar:
    """What the walk needs to know about one language."""

    language: Callable[[], object]  # the grammar's ``language()`` capsule
    functions: frozenset[str]  # node kinds that are functions or methods
    strings: frozenset[str]  # node kinds of string literals
    condition: Callable[[Node, Node], Found | None]  # (ancestor, child on the path)
    owner: Callable[[Node], str | None]  # the type or class a function belongs to
    values: Callable[[Node], tuple[str, ...]]  # what the message literal interpolates
    raised_by: Callable[[Node], str]  # the construct around the message literal
    sep: str = "."
    # Brace languages: a snippet cut inside a block is closed before parsing, so the
    # function it starts in still parses as a function (Python needs no such help).
    braces: bool = True
    # Put before the snippet on its first line (rows stay true): Java methods parse only
    # inside a class, and a snippet rarely reaches back to its class's header.
    prefix: str = ""
    # Parameter-list kinds: inside an ERROR node (a body tree-sitter could not close, such
    # as a ``try`` cut before its ``catch``) a function is its name before its parameters.
    parameters: frozenset[str] = frozenset({"formal_parameters", "parameters", "parameter_list"})
    # Messages declared with a type rather than raised in code (``#[error("…")]`` on a
    # Rust enum variant, a Java enum constant): the declaration's name, or ``None``.
    declared: Callable[[Node], str | None] = field(default=lambda n: None)
    function_name: Callable[[Node], str | None] = field(default=lambda n: name_of(n))


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def name_of(node: Node | None) -> str | None:
    """The ``name`` field of a declaration, as written."""
    name = node.child_by_field_name("name") if node is not None else None
    return text(name) or None


def ancestors(node: Node) -> Iterator[Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def has_placeholder(literal: str) -> bool:
    return bool(_PLACEHOLDER.search(literal))


def args_after(args: Node, literal: Node) -> tuple[str, ...]:
    """The arguments that follow the message literal in an argument list, as written."""
    after = [c for c in args.named_children if c.start_byte >= literal.end_byte]
    out = [clip(text(c), 60) for c in after if c.type not in ("comment", "line_comment")]
    return tuple(out[:MAX_VALUES])


def format_args(literal: Node, top: Node, lists: frozenset[str]) -> list[str]:
    """The arguments after a format string (``top`` is the literal or its ``+`` chain)
    in a call's argument list, when the string has placeholders for them to fill."""
    parent = top.parent
    if parent is None or parent.type not in lists or not has_placeholder(text(literal)):
        return []
    return list(args_after(parent, top))


def capped(found: list[str]) -> tuple[str, ...]:
    """Values in order of appearance, each once, at most ``MAX_VALUES``."""
    return tuple(dict.fromkeys(found))[:MAX_VALUES]


def block_field(node: Node, child: Node) -> str | None:
    """Which field of ``node`` holds ``child`` (``consequence``, ``alternative``, ...)."""
    for index in range(node.child_count):
        if node.children[index] == child:
            return node.field_name_for_child(index)
    return None


def _words(value: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(value)}


def _near_nodes(root: Node, low: int, high: int) -> Iterator[Node]:
    """Every node overlapping rows ``low..high``, without entering other subtrees."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_point.row < low or node.start_point.row > high:
            continue
        yield node
        stack.extend(reversed(node.children))


def _anchor(root: Node, row: int, message: str, grammar: Grammar) -> Node | None:
    """The message literal nearest the site line, else the first node on that line."""
    wanted = _words(_PLACEHOLDER.sub(" ", message))
    best: tuple[int, int, int] | None = None
    chosen: Node | None = None
    for node in _near_nodes(root, row - ROWS_BEFORE, row + ROWS_AFTER):
        if node.type not in grammar.strings:
            continue
        if node.parent is not None and node.parent.type in grammar.strings:
            continue  # a fragment of a larger literal: the literal itself is scored
        score = len(_words(text(node)) & wanted)
        distance = abs(node.start_point.row - row)
        key = (score, -distance, -node.start_byte)
        if score and (best is None or key > best):
            best, chosen = key, node
    if chosen is not None:
        return chosen
    line_nodes = [n for n in _near_nodes(root, row, row) if n.start_point.row == row]
    named = [n for n in line_nodes if n.is_named and n.type != "ERROR"]
    return named[0] if named else None


def _balanced(source: str, grammar: Grammar, row: int, prefix: str) -> str:
    """The snippet with its braces balanced around the site, rows unchanged.

    A snippet starts and ends mid-file. Lines before the site that only close blocks
    opened above the snippet are blanked (kept as empty lines, so rows stay true), and
    blocks left open at the end are closed on a line of their own; tree-sitter then
    parses the functions in between as functions. Braces inside strings and comments are
    counted too: a miscount only moves where recovery happens, away from the site.
    """
    lines = source.split("\n")
    if not grammar.braces:
        return _dedented(lines, row)
    depth = lowest = 0
    cut = -1
    for index, line in enumerate(lines[:row]):
        depth += line.count("{") - line.count("}")
        if depth < lowest:
            lowest, cut = depth, index
    if cut >= 0:
        lines[: cut + 1] = [""] * (cut + 1)
    lines[0] = prefix + lines[0]
    missing = sum(line.count("{") - line.count("}") for line in lines)
    if missing > 0:
        lines.append("}" * min(missing, MAX_CLOSERS))
    return "\n".join(lines)


def _dedented(lines: list[str], row: int) -> str:
    """An indentation language's snippet, cut to start at the site's outermost block.

    The last line before the site with the least indentation opens the outermost block
    the site is in (a ``def`` or ``class`` when the snippet reaches back that far). Lines
    above it are blanked (they may end a docstring whose start is cut off) and the rest
    is dedented to column 0, so the block parses as top-level code; rows stay true.
    """
    depths = [(len(line) - len(line.lstrip()), i) for i, line in enumerate(lines[: row + 1])]
    depths = [(d, i) for d, i in depths if lines[i].strip()]
    if not depths:
        return "\n".join(lines)
    least = min(d for d, _ in depths)
    # A line that starts with a closing bracket ends the previous line's statement (the
    # ``):`` after a long parameter list): the block starts where that statement does.
    # So does a clause of a compound statement (``elif``, ``else``, ``except``): when the
    # snippet starts inside such a chain, its first ``elif`` is read as an ``if``.
    least_lines = [i for d, i in depths if d == least]
    opening = [i for i in least_lines if _opens(lines[i])]
    start = opening[-1] if opening else least_lines[0]
    out = [""] * start
    if not opening and lines[start].lstrip().startswith("elif "):
        lines = [*lines]
        lines[start] = lines[start].replace("elif ", "if   ", 1)
    for line in lines[start:]:
        pad = len(line) - len(line.lstrip())
        out.append(line[min(pad, least) :])
    return "\n".join(out)


_CLAUSES = ("elif ", "elif(", "else:", "else :", "except", "finally", "case ")


def _opens(line: str) -> bool:
    """Whether a line can start a block on its own (not ``):``, not ``else:``)."""
    stripped = line.lstrip()
    return stripped[:1] not in ")]}" and not stripped.startswith(_CLAUSES)


@cache
def _language(grammar: Grammar) -> Language:
    return Language(grammar.language())


def explain_with(
    grammar: Grammar, source: str, *, first_line: int, site_line: int, message: str
) -> Explanation | None:
    if not source or len(source) > MAX_SOURCE_CHARS:
        return None
    row = site_line - first_line
    if not 0 <= row <= source.count("\n"):
        return None
    found = _explain_once(grammar, source, row, message, prefix=grammar.prefix)
    if grammar.prefix and (found is None or found.function is None or found.condition is None):
        # Nothing found inside the wrapper: the snippet starts mid-body, where statements
        # parse only without it (Java statements are not class members).
        bare = _explain_once(grammar, source, row, message, prefix="")
        if bare is not None and (found is None or _score(bare) > _score(found)):
            found = bare
    if found is None:
        return None
    return Explanation(
        function=found.function,
        owner=found.owner,
        condition=found.condition,
        values=found.values,
        lines=tuple(first_line + r for r in found.lines),
        raised_by=found.raised_by,
        sep=grammar.sep,
        declared=found.declared,
    )


def _recovered_name(anchor: Node, grammar: Grammar) -> Node | None:
    """The name of the function an ERROR node around the site flattened, if any."""
    for node in ancestors(anchor):
        if node.type != "ERROR":
            continue
        previous: Node | None = None
        name: Node | None = None
        for child in node.children:
            if child.start_byte >= anchor.start_byte:
                break
            named = previous is not None and previous.type in ("identifier", "field_identifier")
            if child.type in grammar.parameters and named:
                name = previous
            previous = child
        if name is not None:
            return name
    return None


def _score(found: Explanation) -> int:
    return (found.function is not None) + (found.condition is not None) + bool(found.values)


def _explain_once(
    grammar: Grammar, source: str, row: int, message: str, *, prefix: str
) -> Explanation | None:
    """One parse and walk; ``lines`` are snippet rows (0-based) here."""
    code = _balanced(source, grammar, row, prefix)
    tree = Parser(_language(grammar)).parse(code.encode("utf-8", "replace"))
    anchor = _anchor(tree.root_node, row, message, grammar)
    if anchor is None:
        return None
    found: Found | None = None
    function: Node | None = None
    child = anchor
    for node in ancestors(anchor):
        if found is None:
            found = grammar.condition(node, child)
        if node.type in grammar.functions:
            function = node
            break
        child = node
    values = grammar.values(anchor) if anchor.type in grammar.strings else ()
    raised_by = grammar.raised_by(anchor)
    declared = grammar.declared(anchor) if function is None and found is None else None
    name = grammar.function_name(function) if function is not None else None
    recovered = _recovered_name(anchor, grammar) if function is None else None
    if recovered is not None:
        name = text(recovered)
    if name is None and found is None and not values and not raised_by and not declared:
        return None
    rows = {row, anchor.start_point.row}
    if function is not None:
        rows.add((function.child_by_field_name("name") or function).start_point.row)
    if recovered is not None:
        rows.add(recovered.start_point.row)
    for node in found.nodes if found is not None else ():
        start = node.start_point.row
        rows.update(range(start, min(node.end_point.row, start + MAX_MARKED_ROWS - 1) + 1))
    return Explanation(
        function=name,
        owner=grammar.owner(function) if function is not None else None,
        condition=found.condition if found else None,
        values=values,
        lines=tuple(sorted(rows)),
        raised_by=raised_by,
        sep=grammar.sep,
        declared=declared or "",
    )


def concat_top(literal: Node, binary: str) -> Node:
    """The whole ``"a" + x + "b"`` chain the literal is part of (or the literal)."""
    node = literal
    while node.parent is not None and node.parent.type in (binary, "parenthesized_expression"):
        operator = node.parent.child_by_field_name("operator")
        if node.parent.type == binary and text(operator) != "+":
            break
        node = node.parent
    return node


def concat_values(top: Node, binary: str, literals: frozenset[str]) -> list[str]:
    """The operands of a ``+`` chain that are not literals, as written, left to right."""
    out: list[str] = []
    stack = [top]
    while stack:
        node = stack.pop()
        if node.type == binary and text(node.child_by_field_name("operator")) == "+":
            stack.extend(
                n
                for n in (node.child_by_field_name("right"), node.child_by_field_name("left"))
                if n
            )
        elif node.type == "parenthesized_expression" and node.named_child_count == 1:
            stack.append(node.named_children[0])
        elif node.type not in literals and node is not top:
            out.append(clip(text(node), 60))
    return out
