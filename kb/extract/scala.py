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

from tree_sitter import Node

from kb.extract import _jvm
from kb.extract._jvm import HOLE, Variant, text
from kb.extract.sites import ErrorType, Notation, Site

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

#: Predef checks and the prefix their exception's message is printed with.
_CHECKS = {
    "require": ("IllegalArgumentException", "requirement failed: "),
    "assert": ("AssertionError", "assertion failed: "),
}

_INTERPOLATION = re.compile(r"\$\{(?:[^{}]|\{[^{}]*\})*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDERS = {
    Notation.SCALA: _INTERPOLATION,
    Notation.PRINTF: _jvm.PRINTF,
    Notation.SLF4J: _jvm.SLF4J,
    Notation.PLAIN: None,
}
#: After an ``f"…"`` interpolation, the format spec that applies to it (``$x%.2f``).
_SPEC_AFTER = re.compile(r"^%[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z]")


class _File(_jvm.File):
    GRAMMAR = "scala"
    ASSIGNMENTS = _ASSIGNMENTS
    CONSTANTS = _CONSTANTS

    def plain(self, capture: dict[str, list[Node]]) -> bool:
        return "op" not in capture


def _string(node: Node) -> str:
    raw = text(node)
    if raw.startswith('"""'):
        return raw[3:-3]  # triple quotes: no escapes
    return _jvm.decode_escapes(raw[1:-1])


def _strip_margin(value: str) -> str:
    return "\n".join(re.sub(r"^[ \t]*\|", "", line) for line in value.split("\n"))


class _Render(_jvm.Render):
    """Reads one Scala message argument into its variants."""

    CONDITIONAL = "if_expression"
    WRAPPERS = frozenset({"parenthesized_expression", "block"})
    PLUS = "infix_expression"
    STRING = "string"
    BODIES = _BODIES
    PLACEHOLDERS = _PLACEHOLDERS

    def top_other(self, node: Node) -> list[Variant]:
        if node.type == "field_expression" and node.child_by_field_name("value") is not None:
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

    def string(self, node: Node) -> str:
        return _string(node)

    def part_other(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == "interpolated_string_expression":
            return [(self.interpolated(node),)]
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


def _decode(literal: str) -> str:
    return _jvm.decode_escapes(literal.replace("$$", "\0")).replace("\0", "$$")


def _message(file: _File, site: Node, arguments: list[Node]) -> _jvm.Message | None:
    return _jvm.first_message(_Render, file, site, arguments)


def _candidates(file: _File) -> list[_jvm.Candidate]:
    found: list[_jvm.Candidate] = []
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
            found.append(
                _jvm.construction(
                    node,
                    message,
                    error_class,
                    _jvm.errors_code(arguments, "field_expression", "value"),
                    thrown=node.parent is not None and node.parent.type == "throw_expression",
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
                _jvm.Candidate(
                    node,
                    message,
                    ErrorType.EXCEPTION,
                    name,
                    error_class=error_class,
                    prefix=prefix,
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
            found.append(_jvm.errors_exception(node, message, code))
            continue
        if name == "error" and receiver is not None and text(receiver) == "sys":
            message = _message(file, node, arguments)
            if message is not None:
                found.append(
                    _jvm.Candidate(
                        node,
                        message,
                        ErrorType.EXCEPTION,
                        "sys.error",
                        error_class="RuntimeException",
                    )
                )
            continue
        if name not in _jvm.LOG_SEVERITY:
            continue
        if receiver is not None and not _jvm.is_logger(receiver, "field_expression"):
            continue
        message = _message(file, node, arguments)
        if message is None:
            continue
        if message.notation is Notation.PLAIN and any(
            "{}" in p for v in message.variants for p in v if isinstance(p, str)
        ):
            message.notation = Notation.SLF4J
        found.append(
            _jvm.Candidate(
                node,
                message,
                ErrorType.LOG,
                f"{text(receiver)}.{name}" if receiver is not None else name,
                severity=_jvm.LOG_SEVERITY[name],
            )
        )
    return found


def sites(path: str, source: str) -> list[Site]:
    """Every error site of one Scala file, in source order."""
    file = _File(_jvm.parse("scala", source.encode("utf-8")))
    return _jvm.to_sites(path, _candidates(file), _PLACEHOLDERS, _SCOPES)
