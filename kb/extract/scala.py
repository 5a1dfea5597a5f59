"""Error sites in Scala source files (tree-sitter); see `kb.extract`.

What is taken (the Java rules, in Scala's forms): ``new XException(…)``/``new XError(…)``
wherever built and any ``throw new X(…)``; ``require(cond, "…")`` and ``assert(cond, "…")``
(their messages as printed, after ``requirement failed: `` / ``assertion failed: ``) and
``sys.error("…")``; logger ``error``/``warn``/``fatal`` calls (Kafka's ``Logging`` trait
calls them bare, others on a ``logger``); Kafka's ``Errors.X.exception(…)``. The message is
the first argument holding literal text: a literal (triple-quoted and ``.stripMargin`` too),
an ``s"…$x…${expr}"`` or ``f"…"`` interpolation kept in Scala's notation, a ``+``
concatenation (non-literal parts become ``{}``), ``"…%s".format(…)`` (printf); an
``if (c) "a" else "b"`` argument gives one site per branch; a ``val`` with a message-like
name is followed to its value in the function, and a ``val`` of the enclosing object or
class is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from kb.extract import _jvm
from kb.extract._jvm import HOLE, MIN_LITERAL, Variant, text
from kb.extract.sites import ErrorType, Notation, Severity, Site

__all__ = ["sites"]

_SITES = r"""
(instance_expression
  (type_identifier) @type (#match? @type "(Exception|Error|Throwable|Failure)$")
  (arguments) @args) @new
(instance_expression
  (generic_type (type_identifier) @type (#match? @type "(Exception|Error|Throwable|Failure)$"))
  (arguments) @args) @new
(instance_expression
  (stable_type_identifier (type_identifier) @type .)
  (#match? @type "(Exception|Error|Throwable|Failure)$")
  (arguments) @args) @new
(throw_expression (instance_expression (_) @type (arguments) @args) @new)
(call_expression
  function: (identifier) @name (#match? @name "^(error|warn|fatal|require|assert)$")
  arguments: (arguments) @args) @call
(call_expression
  function: (field_expression
    value: (_) @receiver
    field: (identifier) @name (#match? @name "^(error|warn|fatal|exception)$"))
  arguments: (arguments) @args) @call
"""

_ASSIGNMENTS = r"""
(val_definition pattern: (identifier) @name value: (_) @value)
(var_definition pattern: (identifier) @name value: (_) @value)
(assignment_expression left: (identifier) @name right: (_) @value)
(infix_expression left: (identifier) @name operator: (operator_identifier) @op right: (_) @value
  (#eq? @op "+="))
"""

_CONSTANTS = r"""
(template_body (val_definition pattern: (identifier) @name value: (_) @value))
"""

_SCOPES = {
    "class_definition": "name",
    "object_definition": "name",
    "trait_definition": "name",
    "enum_definition": "name",
    "function_definition": "name",
}
_BODIES = frozenset({"function_definition", "lambda_expression", "template_body"})

_MESSAGE_NAME = re.compile(
    r"(?i)msg|message|err|reason|description|detail|^str$|string$|format$|text$"
)
_LOGGER = re.compile(r"(?i)log(ger)?$")
_LOG_SEVERITY = {"error": Severity.ERROR, "warn": Severity.WARNING, "fatal": Severity.FATAL}
#: Predef checks and the prefix their exception's message is printed with.
_CHECKS = {
    "require": ("IllegalArgumentException", "requirement failed: "),
    "assert": ("AssertionError", "assertion failed: "),
}
_MAX_DEPTH = 4

_INTERPOLATION = re.compile(r"\$\{(?:[^{}]|\{[^{}]*\})*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_PRINTF = re.compile(r"%(?:\d+\$)?[-#+ 0,(<]*\d*(?:\.\d+)?[a-zA-Z%]|%n")
_SLF4J = re.compile(r"\{\}")
_PLACEHOLDERS = {
    Notation.SCALA: _INTERPOLATION,
    Notation.PRINTF: _PRINTF,
    Notation.SLF4J: _SLF4J,
    Notation.PLAIN: None,
}
#: After an ``f"…"`` interpolation, the format spec that applies to it (``$x%.2f``).
_SPEC_AFTER = re.compile(r"^%[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z]")


@dataclass
class _Message:
    variants: list[Variant]
    notation: Notation = Notation.PLAIN
    variable: str | None = None
    scope: int = -1


@dataclass
class _File:
    root: Node
    _constants: dict[str, Node] | None = field(default=None)
    _assignments: dict[tuple[int, int], dict[str, list[tuple[Node, bool]]]] = field(
        default_factory=dict
    )

    def assignments(self, scope: Node) -> dict[str, list[tuple[Node, bool]]]:
        """The values given to each local name in ``scope``, in source order, each with
        whether it is a plain assignment (not ``+=``); read once per function."""
        key = (scope.start_byte, scope.end_byte)
        found = self._assignments.get(key)
        if found is None:
            found = {}
            for _, capture in _jvm.matches("scala", _ASSIGNMENTS, scope):
                found.setdefault(text(capture["name"][0]), []).append(
                    (capture["value"][0], "op" not in capture)
                )
            for values in found.values():
                values.sort(key=lambda pair: pair[0].start_byte)
            self._assignments[key] = found
        return found

    def constants(self) -> dict[str, Node]:
        """The ``val``s of the file's objects, classes and traits by name, read once."""
        if self._constants is None:
            self._constants = {}
            for _, capture in _jvm.matches("scala", _CONSTANTS, self.root):
                self._constants.setdefault(text(capture["name"][0]), capture["value"][0])
        return self._constants


def _is_plus(node: Node) -> bool:
    return node.type == "infix_expression" and text(node.child_by_field_name("operator")) == "+"


def _inside(node: Node, ancestor: Node) -> bool:
    return ancestor.start_byte <= node.start_byte and node.end_byte <= ancestor.end_byte


def _string(node: Node) -> str:
    raw = text(node)
    if raw.startswith('"""'):
        return raw[3:-3]  # triple quotes: no escapes
    return _jvm.decode_escapes(raw[1:-1])


def _strip_margin(value: str) -> str:
    return "\n".join(re.sub(r"^[ \t]*\|", "", line) for line in value.split("\n"))


class _Render:
    def __init__(self, file: _File, site: Node, *, constants: bool = True) -> None:
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
        if self.nesting > _jvm.MAX_NESTING:
            return [(HOLE,)]
        self.nesting += 1
        try:
            return self._top(node)
        finally:
            self.nesting -= 1

    def _top(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == "if_expression":
            variants: list[Variant] = []
            for side in ("consequence", "alternative"):
                branch = node.child_by_field_name(side)
                if branch is not None:
                    variants.extend(self.top(branch))
            return variants[: _jvm.MAX_VARIANTS]
        if kind in ("parenthesized_expression", "block") and node.named_child_count == 1:
            return self.top(node.named_children[0])
        if kind == "identifier":
            name = text(node)
            if _MESSAGE_NAME.search(name):
                followed = self.follow(name)
                if followed:
                    if self.variable is None:
                        scope = self.scope_of()
                        self.variable = name
                        self.scope = scope.start_byte if scope is not None else -1
                    return followed
            return self.constant(node, name)
        if kind == "field_expression" and node.child_by_field_name("value") is not None:
            value = node.child_by_field_name("value")
            name = text(node.child_by_field_name("field"))
            if name == "stripMargin" and value is not None:
                return [
                    tuple(_strip_margin(p) if isinstance(p, str) else p for p in v)
                    for v in self.part(value)
                ]
            if value is not None and value.type == "identifier" and name[:1].isupper():
                return self.constant(node, name)
        return self.part(node)

    def constant(self, node: Node, name: str) -> list[Variant]:
        value = self.file.constants().get(name) if self.constants else None
        if value is None or _inside(node, value) or self.depth > _MAX_DEPTH:
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
        if self.nesting > _jvm.MAX_NESTING:
            return [(HOLE,)]
        self.nesting += 1
        try:
            return self._part(node)
        finally:
            self.nesting -= 1

    def _part(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == "string":
            return [(_string(node),)]
        if kind == "interpolated_string_expression":
            return [(self.interpolated(node),)]
        if _is_plus(node):
            variants: list[Variant] = [()]
            for operand in _jvm.operands(node, _is_plus):
                variants = _jvm.concat(variants, self.part(operand))
            return variants
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            inner = self.part(node.named_children[0])
            if any(isinstance(p, str) for v in inner for p in v):
                return inner
            return [(HOLE,)]
        if kind == "field_expression" and text(node.child_by_field_name("field")) == "stripMargin":
            return self.top(node)
        if kind == "call_expression":
            function = node.child_by_field_name("function")
            if (
                function is not None
                and function.type == "field_expression"
                and text(function.child_by_field_name("field")) == "format"
            ):
                receiver = function.child_by_field_name("value")
                if receiver is not None and receiver.type in ("string", "field_expression"):
                    variants = self.top(receiver)
                    if any(isinstance(p, str) for v in variants for p in v):
                        self.notation = Notation.PRINTF
                        return variants
        return [(HOLE,)]

    def interpolated(self, node: Node) -> str:
        """An ``s"…"``/``f"…"``/``raw"…"`` text as written, its ``$x`` and ``${expr}``
        kept (an ``f`` format spec after one dropped: only the value is printed)."""
        interpolator = text(node.child_by_field_name("interpolator"))
        body = node.named_children[-1] if node.named_child_count else None
        if body is None:
            return ""
        raw = text(body)
        quote = 3 if raw.startswith('"""') else 1
        source = body.text or b""
        pieces: list[str] = []
        cursor = quote
        triple = quote == 3
        for child in body.named_children:
            if child.type != "interpolation":
                continue
            offset = child.start_byte - body.start_byte
            literal = source[cursor:offset].decode("utf-8", "replace")
            if interpolator == "f" and pieces:
                literal = _SPEC_AFTER.sub("", literal)
            pieces.append(literal if triple or interpolator == "raw" else _decode(literal))
            pieces.append(text(child))
            cursor = child.end_byte - body.start_byte
        literal = source[cursor : len(source) - quote].decode("utf-8", "replace")
        if interpolator == "f" and pieces:
            literal = _SPEC_AFTER.sub("", literal)
        pieces.append(literal if triple or interpolator == "raw" else _decode(literal))
        interpolates = any(child.type == "interpolation" for child in body.children)
        if self.notation is Notation.PLAIN and interpolates:
            self.notation = Notation.SCALA
        return "".join(pieces)

    def scope_of(self) -> Node | None:
        scope = self.site.parent
        while scope is not None and scope.type not in _BODIES:
            scope = scope.parent
        return scope

    def follow(self, name: str) -> list[Variant]:
        scope = self.scope_of()
        if scope is None or self.depth > _MAX_DEPTH:
            return []
        self.depth += 1
        try:
            variants: list[Variant] = []
            for value, plain in self.file.assignments(scope).get(name, ()):
                if value.start_byte >= self.site.start_byte:
                    continue
                if not plain:
                    return []  # built with +=: not followed
                variants.extend(self.top(value))
            return [v for v in variants if v != (HOLE,)][: _jvm.MAX_VARIANTS]
        finally:
            self.depth -= 1


def _decode(literal: str) -> str:
    return _jvm.decode_escapes(literal.replace("$$", "\0")).replace("\0", "$$")


def _long_enough(variants: list[Variant], notation: Notation) -> bool:
    placeholder = _PLACEHOLDERS.get(notation)
    return any(_jvm.literal_length(v, placeholder) >= MIN_LITERAL for v in variants)


def _message(file: _File, site: Node, arguments: list[Node]) -> _Message | None:
    for constants in (False, True):
        for argument in arguments:
            render = _Render(file, site, constants=constants)
            variants = render.top(argument)
            if _long_enough(variants, render.notation):
                return _Message(variants, render.notation, render.variable, render.scope)
    return None


@dataclass
class _Candidate:
    node: Node
    message: _Message
    error_type: ErrorType
    severity: Severity
    error_class: str | None
    error_code: str | None
    call: str
    prefix: str = ""


def _errors_code(arguments: list[Node]) -> str | None:
    for argument in arguments:
        if argument.type == "field_expression" and text(argument.child_by_field_name("value")) == (
            "Errors"
        ):
            return text(argument.child_by_field_name("field"))
    return None


def _candidates(file: _File) -> list[_Candidate]:
    found: list[_Candidate] = []
    seen: set[int] = set()
    for pattern, capture in _jvm.matches("scala", _SITES, file.root):
        arguments = capture["args"][0].named_children
        if pattern <= 3:
            node = capture["new"][0]
            if node.start_byte in seen:
                continue
            seen.add(node.start_byte)
            message = _message(file, node, arguments)
            if message is None:
                continue
            error_class = text(capture["type"][0]).split("[", 1)[0].rsplit(".", 1)[-1]
            code = _errors_code(arguments)
            thrown = node.parent is not None and node.parent.type == "throw_expression"
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE if code else ErrorType.EXCEPTION,
                    Severity.ERROR,
                    error_class,
                    code,
                    ("throw new " if thrown else "new ") + error_class,
                )
            )
            continue
        node = capture["call"][0]
        name = text(capture["name"][0])
        receiver = capture.get("receiver", [None])[0]
        if receiver is None and name in _CHECKS:
            if len(arguments) < 2:
                continue
            message = _message(file, node, arguments[1:2])
            if message is None:
                continue
            error_class, prefix = _CHECKS[name]
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.EXCEPTION,
                    Severity.ERROR,
                    error_class,
                    None,
                    name,
                    prefix,
                )
            )
            continue
        if name == "exception":
            if receiver is None or receiver.type != "field_expression":
                continue
            if text(receiver.child_by_field_name("value")) != "Errors":
                continue
            message = _message(file, node, arguments)
            if message is None:
                continue
            code = text(receiver.child_by_field_name("field"))
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE,
                    Severity.ERROR,
                    None,
                    code,
                    f"Errors.{code}.exception",
                )
            )
            continue
        if name == "error" and receiver is not None and text(receiver) == "sys":
            message = _message(file, node, arguments)
            if message is not None:
                found.append(
                    _Candidate(
                        node,
                        message,
                        ErrorType.EXCEPTION,
                        Severity.ERROR,
                        "RuntimeException",
                        None,
                        "sys.error",
                    )
                )
            continue
        if name not in _LOG_SEVERITY:
            continue
        if receiver is not None:
            last: Node | None = receiver
            if receiver.type == "field_expression":
                last = receiver.child_by_field_name("field")
            if last is None or last.type != "identifier" or not _LOGGER.search(text(last)):
                continue
        message = _message(file, node, arguments)
        if message is None:
            continue
        if message.notation is Notation.PLAIN and any(
            "{}" in p for v in message.variants for p in v if isinstance(p, str)
        ):
            message.notation = Notation.SLF4J
        found.append(
            _Candidate(
                node,
                message,
                ErrorType.LOG,
                _LOG_SEVERITY[name],
                None,
                None,
                f"{text(receiver)}.{name}" if receiver is not None else name,
            )
        )
    return found


def _first_use(candidates: list[_Candidate]) -> list[_Candidate]:
    """One site per message variable of a function: its first raise, else its first log."""
    chosen: dict[tuple[int, str, tuple[Variant, ...]], _Candidate] = {}
    kept: list[_Candidate] = []
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


def sites(path: str, source: str) -> list[Site]:
    """Every error site of one Scala file, in source order."""
    file = _File(_jvm.parse("scala", source.encode("utf-8")))
    result: list[Site] = []
    for candidate in _first_use(_candidates(file)):
        placeholder = _PLACEHOLDERS.get(candidate.message.notation)
        templates: list[str] = []
        for variant in candidate.message.variants:
            if _jvm.literal_length(variant, placeholder) < MIN_LITERAL:
                continue
            templates.append(candidate.prefix + _jvm.template_of(variant))
        function = _jvm.qualified_name(candidate.node, _SCOPES)
        for template in _jvm.unique(templates):
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
                    function=function,
                    call=candidate.call,
                )
            )
    return result
