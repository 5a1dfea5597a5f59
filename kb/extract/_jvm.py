"""What the Java and Scala extractors share: grammars, queries, string escapes, templates,
and the reading of a message argument (`Render`) and of a file's candidates into sites.

A message is built as a list of *variants* (a ``c ? "a" : "b"`` argument, or a variable
assigned in two branches, gives two), each a tuple of parts: a ``str`` is literal text and
`HOLE` a non-literal part of a concatenation, written ``{}`` in the template. What differs
between the two languages (node kinds, string literals, their own constructs) stays in
their modules, as class attributes and overrides of `File` and `Render`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Final

import tree_sitter_java
import tree_sitter_scala
from tree_sitter import Node

from kb.extract import _ts
from kb.extract.sites import MIN_LITERAL, ErrorType, Notation, Severity, Site

__all__ = [
    "HOLE",
    "LOGGER",
    "LOG_SEVERITY",
    "MAX_NESTING",
    "PRINTF",
    "SLF4J",
    "Candidate",
    "File",
    "Message",
    "Part",
    "Render",
    "Variant",
    "concat",
    "construction",
    "decode_escapes",
    "errors_code",
    "errors_exception",
    "first_message",
    "first_use",
    "inside",
    "is_logger",
    "literal_length",
    "matches",
    "operands",
    "parse",
    "template_of",
    "text",
    "to_sites",
]


class _Hole:
    """A non-literal part of a concatenation (one object, compared by identity)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "HOLE"


HOLE: Final = _Hole()
Part = str | _Hole
Variant = tuple[Part, ...]

#: A message built from more alternatives than this (nested conditionals, a variable
#: assigned in many branches) is cut: the first ones are kept, the rest add nothing a
#: person would paste that the first ones do not show.
MAX_VARIANTS = 8
#: How deep a message expression is read (parentheses, conditionals, calls, variables):
#: past it the part is a hole, so hostile nesting cannot exhaust Python's stack.
MAX_NESTING = 48
#: How deep a variable or constant is followed through others (``a = b; b = A``).
MAX_DEPTH = 4

#: Names of local variables that hold a message (followed back to their assignments).
MESSAGE_NAME = re.compile(
    r"(?i)msg|message|err|reason|description|detail|^str$|string$|format$|text$"
)
#: Logger receivers: ``log``, ``LOG``, ``logger``, ``this.log``, ``stateChangeLogger``.
LOGGER = re.compile(r"(?i)log(ger)?$")
LOG_SEVERITY = {"error": Severity.ERROR, "warn": Severity.WARNING, "fatal": Severity.FATAL}
PRINTF = re.compile(r"%(?:\d+\$)?[-#+ 0,(<]*\d*(?:\.\d+)?[a-zA-Z%]|%n")
SLF4J = re.compile(r"\{\}")

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


_GRAMMARS: Final = {"java": tree_sitter_java.language, "scala": tree_sitter_scala.language}


def parse(name: str, source: bytes) -> Node:
    """The root node of ``source`` parsed with the grammar ``name`` ("java" or "scala")."""
    return _ts.parse(_GRAMMARS[name], source).root_node


def matches(name: str, query: str, node: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """The matches of ``query`` (compiled once per grammar) under ``node``."""
    return _ts.matches(_ts.query(_GRAMMARS[name], query), node)


def text(node: Node | None) -> str:
    """A node's source text, bytes that are no UTF-8 as U+FFFD."""
    return _ts.text(node, errors="replace")


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


def inside(node: Node, ancestor: Node) -> bool:
    """Whether ``node`` lies within ``ancestor``'s bytes."""
    return ancestor.start_byte <= node.start_byte and node.end_byte <= ancestor.end_byte


@dataclass
class Message:
    """A message argument read: its variants, its notation, and the variable it was read
    from (``None`` when written in the call)."""

    variants: list[Variant]
    notation: Notation = Notation.PLAIN
    variable: str | None = None
    scope: int = -1  # where the variable's method starts (overloads share a name)


class File:
    """One parsed file, with what a message may be followed to (the local assignments of
    a method, the file's constants) read once. A language's subclass gives the grammar,
    the queries (captures ``@name`` and ``@value``) and what a plain assignment is."""

    GRAMMAR: ClassVar[str]
    ASSIGNMENTS: ClassVar[str]
    CONSTANTS: ClassVar[str]

    def __init__(self, root: Node) -> None:
        self.root = root
        self._constants: dict[str, Node] | None = None
        self._assignments: dict[tuple[int, int], dict[str, list[tuple[Node, bool]]]] = {}

    def plain(self, capture: dict[str, list[Node]]) -> bool:
        """Whether an assignment the query captured sets the name (not ``+=``)."""
        raise NotImplementedError

    def assignments(self, scope: Node) -> dict[str, list[tuple[Node, bool]]]:
        """The values given to each local name in ``scope``, in source order, each with
        whether it is a plain assignment (not ``+=``); read once per method."""
        key = (scope.start_byte, scope.end_byte)
        found = self._assignments.get(key)
        if found is None:
            found = {}
            for _, capture in matches(self.GRAMMAR, self.ASSIGNMENTS, scope):
                found.setdefault(text(capture["name"][0]), []).append(
                    (capture["value"][0], self.plain(capture))
                )
            for values in found.values():
                values.sort(key=lambda pair: pair[0].start_byte)
            self._assignments[key] = found
        return found

    def constants(self) -> dict[str, Node]:
        """The file's constants by name (their values), first one kept, read once."""
        if self._constants is None:
            self._constants = {}
            for _, capture in matches(self.GRAMMAR, self.CONSTANTS, self.root):
                self._constants.setdefault(text(capture["name"][0]), capture["value"][0])
        return self._constants


class Render:
    """Reads one message argument into its variants. A language's subclass names its node
    kinds, reads its string literals, and adds its own constructs in `top_other` and
    `part_other`."""

    #: The conditional whose two branches give a variant each.
    CONDITIONAL: ClassVar[str]
    #: Nodes read through, as a whole argument, when they hold one expression.
    WRAPPERS: ClassVar[frozenset[str]]
    #: The binary node whose ``+`` concatenates.
    PLUS: ClassVar[str]
    #: A string literal.
    STRING: ClassVar[str]
    #: The nodes whose local assignments a message variable is followed through.
    BODIES: ClassVar[frozenset[str]]
    #: What a placeholder of each notation looks like (not counted as literal text).
    PLACEHOLDERS: ClassVar[dict[Notation, re.Pattern[str] | None]]

    def __init__(self, file: File, site: Node, *, constants: bool = True) -> None:
        self.file = file
        self.site = site
        self.constants = constants
        self.notation = Notation.PLAIN
        self.variable: str | None = None
        self.scope = -1
        self.depth = 0
        self.nesting = 0

    def top(self, node: Node) -> list[Variant]:
        """The variants of a whole argument (or a whole assignment's value)."""
        return self._nested(self._top, node)

    def _nested(self, read: Callable[[Node], list[Variant]], node: Node) -> list[Variant]:
        """``read(node)`` one level deeper; past `MAX_NESTING` the node is a hole."""
        if self.nesting > MAX_NESTING:
            return [(HOLE,)]
        self.nesting += 1
        try:
            return read(node)
        finally:
            self.nesting -= 1

    def _top(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == self.CONDITIONAL:
            variants: list[Variant] = []
            for side in ("consequence", "alternative"):
                branch = node.child_by_field_name(side)
                if branch is not None:
                    variants.extend(self.top(branch))
            return variants[:MAX_VARIANTS]
        if kind in self.WRAPPERS and node.named_child_count == 1:
            return self.top(node.named_children[0])
        if kind == "identifier":
            name = text(node)
            if MESSAGE_NAME.search(name):
                followed = self.follow(name)
                if followed:
                    if self.variable is None:
                        self.variable = name
                        scope = self.scope_of()
                        self.scope = scope.start_byte if scope is not None else -1
                    return followed
            return self.constant(node, name)
        return self.top_other(node)

    def top_other(self, node: Node) -> list[Variant]:
        """A whole argument of a kind the shared rules do not read: a part by default."""
        return self.part(node)

    def constant(self, node: Node, name: str) -> list[Variant]:
        """The value of a constant of the file used as the whole message."""
        value = self.file.constants().get(name) if self.constants else None
        if value is None or inside(node, value) or self.depth > MAX_DEPTH:
            return [(HOLE,)]
        if self.variable is None:  # logged and then thrown: one site, like a variable
            scope = self.scope_of()
            self.variable = name
            self.scope = scope.start_byte if scope is not None else -1
        self.depth += 1
        try:
            return self.top(value)
        finally:
            self.depth -= 1

    def part(self, node: Node) -> list[Variant]:
        """The variants of a part of a concatenation."""
        return self._nested(self._part, node)

    def _part(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == self.STRING:
            return [(self.string(node),)]
        if self.is_plus(node):
            variants: list[Variant] = [()]
            for operand in operands(node, self.is_plus):
                variants = concat(variants, self.part(operand))
            return variants
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            inner = self.part(node.named_children[0])
            if any(isinstance(p, str) for v in inner for p in v):
                return inner
            return [(HOLE,)]
        return self.part_other(node)

    def part_other(self, node: Node) -> list[Variant]:
        """A part of a kind the shared rules do not read: a hole by default."""
        return [(HOLE,)]

    def string(self, node: Node) -> str:
        """The characters a string literal stands for."""
        raise NotImplementedError

    def is_plus(self, node: Node) -> bool:
        return node.type == self.PLUS and text(node.child_by_field_name("operator")) == "+"

    def scope_of(self) -> Node | None:
        """The method (or lambda, initializer) the site is in."""
        scope = self.site.parent
        while scope is not None and scope.type not in self.BODIES:
            scope = scope.parent
        return scope

    def follow(self, name: str) -> list[Variant]:
        """The values a message-like local variable is given before the site, in its
        method: one variant per assignment, none when it is built with ``+=``."""
        scope = self.scope_of()
        if scope is None or self.depth > MAX_DEPTH:
            return []
        self.depth += 1
        try:
            variants: list[Variant] = []
            for value, plain in self.file.assignments(scope).get(name, ()):
                if value.start_byte >= self.site.start_byte:
                    continue
                if not plain:
                    return []  # built with +=: not followed
                if self.abandoned(value):
                    continue
                variants.extend(self.top(value))
            return [v for v in variants if v != (HOLE,)][:MAX_VARIANTS]
        finally:
            self.depth -= 1

    def abandoned(self, value: Node) -> bool:
        """Whether the assignment ``value`` is used elsewhere than at the site (none is
        by default)."""
        return False

    def long_enough(self, variants: list[Variant]) -> bool:
        """Whether a variant has enough literal text in this render's notation."""
        placeholder = self.PLACEHOLDERS.get(self.notation)
        return any(literal_length(v, placeholder) >= MIN_LITERAL for v in variants)


def is_logger(receiver: Node, access: str) -> bool:
    """Whether a call's ``receiver`` is a logger (``log``, ``this.log``,
    ``stateChangeLogger``): its last name, after the grammar's member ``access``."""
    last = receiver.child_by_field_name("field") if receiver.type == access else receiver
    return last is not None and last.type == "identifier" and bool(LOGGER.search(text(last)))


def first_message(
    render: type[Render], file: File, site: Node, arguments: list[Node]
) -> Message | None:
    """The first argument that holds literal text, read into its variants; failing that,
    the first naming a constant of the file."""
    for constants in (False, True):
        for argument in arguments:
            reader = render(file, site, constants=constants)
            variants = reader.top(argument)
            if reader.long_enough(variants):
                return Message(variants, reader.notation, reader.variable, reader.scope)
    return None


@dataclass
class Candidate:
    """An error site found, before its message's variants become `Site`s."""

    node: Node
    message: Message
    error_type: ErrorType
    call: str
    severity: Severity = Severity.ERROR
    error_class: str | None = None
    error_code: str | None = None
    function: str | None = None  # None: the named scopes around the node
    http_status: int | None = None
    prefix: str = ""  # printed before the message (Scala's ``requirement failed: ``)


def construction(
    node: Node,
    message: Message,
    error_class: str,
    error_code: str | None,
    *,
    thrown: bool,
    function: str | None = None,
    http_status: int | None = None,
) -> Candidate:
    """A ``new X(…)`` (``throw new X(…)`` when ``thrown``): an exception, or an error
    code's when an ``Errors.X`` argument names one."""
    return Candidate(
        node,
        message,
        ErrorType.ERROR_CODE if error_code else ErrorType.EXCEPTION,
        ("throw new " if thrown else "new ") + error_class,
        error_class=error_class,
        error_code=error_code,
        function=function,
        http_status=http_status,
    )


def errors_exception(node: Node, message: Message, code: str) -> Candidate:
    """Kafka's ``Errors.X.exception(…)``: the exception of error code ``X``."""
    return Candidate(
        node, message, ErrorType.ERROR_CODE, f"Errors.{code}.exception", error_code=code
    )


def errors_code(arguments: list[Node], access: str, owner: str) -> str | None:
    """``X`` of an ``Errors.X`` argument (Kafka's ``new ApiError(Errors.X, "…")``):
    ``access`` is the grammar's member access node, ``owner`` its field for the left side."""
    for argument in arguments:
        if argument.type == access and text(argument.child_by_field_name(owner)) == "Errors":
            return text(argument.child_by_field_name("field"))
    return None


def first_use(candidates: list[Candidate]) -> list[Candidate]:
    """One site per message variable of a method: its first ``throw`` (or ``new``), else
    its first log call, as the dataset does for a message logged and then thrown."""
    chosen: dict[tuple[int, str, tuple[Variant, ...]], Candidate] = {}
    kept: list[Candidate] = []
    for candidate in candidates:
        variable = candidate.message.variable
        if variable is None:
            kept.append(candidate)
            continue
        key = (candidate.message.scope, variable, tuple(candidate.message.variants))
        current = chosen.get(key)
        if current is None or (
            current.error_type is ErrorType.LOG and candidate.error_type is not ErrorType.LOG
        ):
            chosen[key] = candidate
    kept.extend(chosen.values())
    kept.sort(key=lambda c: c.node.start_byte)
    return kept


def to_sites(
    path: str,
    candidates: list[Candidate],
    placeholders: dict[Notation, re.Pattern[str] | None],
    scopes: dict[str, str],
) -> list[Site]:
    """The sites of a file's candidates, in source order: one per variant of each
    message with enough literal text (repeats dropped)."""
    result: list[Site] = []
    for candidate in first_use(candidates):
        placeholder = placeholders.get(candidate.message.notation)
        templates: list[str] = []
        for variant in candidate.message.variants:
            if literal_length(variant, placeholder) < MIN_LITERAL:
                continue
            templates.append(candidate.prefix + template_of(variant))
        function = candidate.function
        if function is None:
            function = qualified_name(candidate.node, scopes)
        for template in unique(templates):
            result.append(
                Site(
                    path=path,
                    line=candidate.node.start_point.row + 1,
                    end_line=candidate.node.end_point.row + 1,
                    template=template,
                    notation=candidate.message.notation,
                    error_type=candidate.error_type,
                    severity=candidate.severity,
                    error_class=candidate.error_class,
                    error_code=candidate.error_code,
                    http_status=candidate.http_status,
                    function=function,
                    call=candidate.call,
                )
            )
    return result
