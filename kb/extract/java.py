"""Error sites in Java source files (tree-sitter); see `kb.extract`.

What is taken (the dataset's Java rules, read with a parser): ``new XException(…)`` and
``new XError(…)`` wherever they are built, and any ``throw new X(…)``; SLF4J/log4j
``log.error``/``log.warn``/``log.fatal``; Kafka's ``Errors.X.exception(…)`` and the
constants of an ``Errors`` enum (their default messages); and, past the dataset's rules,
the checks that throw their message (``Objects.requireNonNull(x, "…")``, Guava's
``Preconditions.checkArgument``/``checkState``/``checkNotNull``). The message is the first argument
holding literal text: a literal, a ``+`` concatenation (non-literal parts become ``{}``),
``String.format``/``"…".formatted`` (printf ``%s``), ``MessageFormat.format`` (``{0}``);
a ``c ? "a" : "b"`` argument gives one site per side; a local variable with a message-like
name (``msg``, ``errorMessage``) is followed through its assignments in the method, and a
``static final String`` constant of the file is read. One query finds every candidate, so
the per-node work in Python is only for the calls that are error sites.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from kb.extract import _jvm
from kb.extract._jvm import HOLE, Variant, text
from kb.extract.sites import ErrorType, Notation, Site

__all__ = ["sites"]

_SITES = r"""
(object_creation_expression
  type: (_) @type (#match? @type "(Exception|Error|Throwable|Failure)(<.*>)?$")
  arguments: (argument_list) @args) @new
(throw_statement (object_creation_expression type: (_) @type arguments: (argument_list) @args) @new)
(method_invocation
  name: (identifier) @level (#match? @level "^(error|warn|fatal)$")
  arguments: (argument_list) @args) @log
(method_invocation
  object: (field_access object: (identifier) @errors field: (identifier) @code)
  name: (identifier) @exception
  arguments: (argument_list) @args
  (#eq? @errors "Errors") (#eq? @exception "exception")) @errors_exception
(enum_declaration
  name: (identifier) @enum (#match? @enum "(Errors?|ErrorCodes?)$")
  body: (enum_body
    (enum_constant name: (identifier) @code arguments: (argument_list) @args) @constant))
(method_invocation
  name: (identifier) @check
  (#match? @check "^(requireNonNull|checkArgument|checkState|checkNotNull)$")
  arguments: (argument_list) @args) @check_call
"""

_ASSIGNMENTS = r"""
(variable_declarator name: (identifier) @name value: (_) @value)
(assignment_expression left: (identifier) @name right: (_) @value) @assign
"""

_CONSTANTS = r"""
(field_declaration
  (modifiers "final")
  declarator: (variable_declarator name: (identifier) @name value: (_) @value))
"""

_SCOPES = {
    "class_declaration": "name",
    "interface_declaration": "name",
    "enum_declaration": "name",
    "record_declaration": "name",
    "annotation_type_declaration": "name",
    "method_declaration": "name",
    "constructor_declaration": "name",
    "compact_constructor_declaration": "name",
}
_BODIES = frozenset(
    {
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        "static_initializer",
        "lambda_expression",
    }
)

_MESSAGE_FORMAT = re.compile(r"\{\d+(?:,[^{}]*)?\}")
_PLACEHOLDERS = {
    Notation.PRINTF: _jvm.PRINTF,
    Notation.JAVA_MESSAGE_FORMAT: _MESSAGE_FORMAT,
    Notation.SLF4J: _jvm.SLF4J,
    Notation.PLAIN: None,
}

#: JAX-RS ``Response.Status`` names and the HTTP status each stands for.
_JAXRS_STATUS = {
    "OK": 200,
    "BAD_REQUEST": 400,
    "UNAUTHORIZED": 401,
    "PAYMENT_REQUIRED": 402,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "NOT_ACCEPTABLE": 406,
    "REQUEST_TIMEOUT": 408,
    "CONFLICT": 409,
    "GONE": 410,
    "PRECONDITION_FAILED": 412,
    "REQUEST_ENTITY_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL_SERVER_ERROR": 500,
    "NOT_IMPLEMENTED": 501,
    "BAD_GATEWAY": 502,
    "SERVICE_UNAVAILABLE": 503,
    "GATEWAY_TIMEOUT": 504,
}
#: JAX-RS exceptions (and Kafka Connect's REST ones) whose class says the status.
_STATUS_OF_CLASS = {
    "BadRequestException": 400,
    "NotAuthorizedException": 401,
    "ForbiddenException": 403,
    "NotFoundException": 404,
    "NotAllowedException": 405,
    "NotAcceptableException": 406,
    "NotSupportedException": 415,
    "InternalServerErrorException": 500,
    "ServiceUnavailableException": 503,
}


class _File(_jvm.File):
    GRAMMAR = "java"
    ASSIGNMENTS = _ASSIGNMENTS
    CONSTANTS = _CONSTANTS

    def plain(self, capture: dict[str, list[Node]]) -> bool:
        assign = capture.get("assign")
        return not assign or text(assign[0].child_by_field_name("operator")) == "="


class _Render(_jvm.Render):
    """Reads one Java message argument into its variants."""

    CONDITIONAL = "ternary_expression"
    WRAPPERS = frozenset({"parenthesized_expression"})
    PLUS = "binary_expression"
    STRING = "string_literal"
    BODIES = _BODIES
    PLACEHOLDERS = _PLACEHOLDERS

    def top_other(self, node: Node) -> list[Variant]:
        kind = node.type
        if kind == "lambda_expression":  # a message supplier: () -> "…" + x
            body = node.child_by_field_name("body")
            if body is not None and body.type != "block":
                return self.top(body)
            return [(HOLE,)]
        if kind == "field_access":
            return self.constant(node, text(node.child_by_field_name("field")))
        return self.part(node)

    def part_other(self, node: Node) -> list[Variant]:
        if node.type == "method_invocation":
            formatted = self.format_call(node)
            if formatted is not None:
                return formatted
        return [(HOLE,)]

    def format_call(self, node: Node) -> list[Variant] | None:
        """``String.format(…)``, ``MessageFormat.format(…)``, ``"…".formatted(…)``."""
        name = text(node.child_by_field_name("name"))
        receiver = node.child_by_field_name("object")
        owner = text(receiver)
        arguments = node.child_by_field_name("arguments")
        if name == "formatted" and receiver is not None and receiver.type == "string_literal":
            self.notation = Notation.PRINTF
            return [(_string(receiver),)]
        if name != "format" or arguments is None:
            return None
        if owner in ("", "String"):
            notation = Notation.PRINTF
        elif owner.endswith("MessageFormat"):
            notation = Notation.JAVA_MESSAGE_FORMAT
        else:
            return None
        for argument in arguments.named_children:
            variants = self.top(argument)
            if _has_literal(variants):
                self.notation = notation
                return variants
        return None

    def abandoned(self, value: Node) -> bool:
        """Whether ``value`` is assigned in a block that ends in ``throw``/``return`` and
        does not hold the site: that message is used there, not at the site."""
        block = value.parent
        while block is not None and block.type != "block":
            block = block.parent
        if block is None or _jvm.inside(self.site, block) or block.named_child_count == 0:
            return False
        return block.named_children[-1].type in ("throw_statement", "return_statement")

    def string(self, node: Node) -> str:
        return _string(node)


def _string(node: Node) -> str:
    raw = text(node)
    if raw.startswith('"""'):
        return _jvm.decode_escapes(_jvm.dedent_text_block(raw[3:-3]))
    return _jvm.decode_escapes(raw[1:-1])


def _has_literal(variants: list[Variant]) -> bool:
    return any(isinstance(part, str) and part for variant in variants for part in variant)


def _simple_name(type_node: Node) -> str:
    name = text(type_node).split("<", 1)[0]
    return name.rsplit(".", 1)[-1].strip()


def _message(
    file: _File, site: Node, arguments: list[Node], *, nested: bool = True
) -> _jvm.Message | None:
    """The first argument that holds literal text, read into its variants; failing that,
    the first naming a constant of the file; failing that, the message of a call among
    the arguments (``new X(formatException("…"))``, ``newFailure("…")``)."""
    message = _jvm.first_message(_Render, file, site, arguments)
    if message is not None:
        return message
    if nested:
        for argument in arguments:
            if argument.type == "method_invocation":
                inner = argument.child_by_field_name("arguments")
                if inner is not None:
                    message = _message(file, site, inner.named_children, nested=False)
                    if message is not None:
                        return message
    return None


def _http_status(arguments: Node, error_class: str) -> int | None:
    """The status a JAX-RS ``Response.Status.X`` argument (or the class) stands for."""
    for argument in arguments.named_children:
        status = argument
        if status.type == "method_invocation":  # Response.Status.X.getStatusCode()
            receiver = status.child_by_field_name("object")
            if receiver is None:
                continue
            status = receiver
        if status.type == "field_access" and text(status.child_by_field_name("object")).endswith(
            "Status"
        ):
            code = _JAXRS_STATUS.get(text(status.child_by_field_name("field")))
            if code is not None:
                return code
    return _STATUS_OF_CLASS.get(error_class)


#: Argument checks that throw their message (``Objects.requireNonNull`` and Guava's
#: ``Preconditions``), with the class thrown; the message follows the checked value.
_CHECKS = {
    "requireNonNull": ("Objects", "NullPointerException"),
    "checkNotNull": ("Preconditions", "NullPointerException"),
    "checkArgument": ("Preconditions", "IllegalArgumentException"),
    "checkState": ("Preconditions", "IllegalStateException"),
}


def _check(file: _File, node: Node, name_node: Node, arguments: Node) -> _jvm.Candidate | None:
    name = text(name_node)
    owner, error_class = _CHECKS[name]
    receiver = text(node.child_by_field_name("object"))
    if receiver not in ("", owner) and not receiver.endswith("." + owner):
        return None
    values = arguments.named_children
    message = _message(file, node, values[1:2], nested=False)
    if message is None:
        return None
    if owner == "Preconditions" and message.notation is Notation.PLAIN and len(values) > 2:
        message.notation = Notation.PRINTF  # Guava fills each %s with the arguments after
    return _jvm.Candidate(
        node,
        message,
        ErrorType.EXCEPTION,
        f"{receiver}.{name}" if receiver else name,
        error_class=error_class,
    )


def _candidates(file: _File) -> list[_jvm.Candidate]:
    found: list[_jvm.Candidate] = []
    seen: set[int] = set()
    for pattern, capture in _jvm.matches("java", _SITES, file.root):
        arguments = capture["args"][0]
        if pattern == 5:
            checked = _check(file, capture["check_call"][0], capture["check"][0], arguments)
            if checked is not None:
                found.append(checked)
            continue
        if pattern in (0, 1):
            node = capture["new"][0]
            if node.start_byte in seen:
                continue
            seen.add(node.start_byte)
            message = _message(file, node, arguments.named_children)
            if message is None:
                continue
            error_class = _simple_name(capture["type"][0])
            found.append(
                _jvm.construction(
                    node,
                    message,
                    error_class,
                    _jvm.errors_code(arguments.named_children, "field_access", "object"),
                    thrown=node.parent is not None and node.parent.type == "throw_statement",
                    http_status=_http_status(arguments, error_class),
                )
            )
        elif pattern == 2:
            node = capture["log"][0]
            receiver = node.child_by_field_name("object")
            if receiver is None or not _jvm.is_logger(receiver, "field_access"):
                continue
            message = _message(file, node, arguments.named_children)
            if message is None:
                continue
            if message.notation is Notation.PLAIN:
                message.notation = Notation.SLF4J
            level = text(capture["level"][0])
            found.append(
                _jvm.Candidate(
                    node,
                    message,
                    ErrorType.LOG,
                    f"{text(node.child_by_field_name('object'))}.{level}",
                    severity=_jvm.LOG_SEVERITY[level],
                )
            )
        elif pattern == 3:
            node = capture["errors_exception"][0]
            message = _message(file, node, arguments.named_children)
            if message is None:
                continue
            found.append(_jvm.errors_exception(node, message, text(capture["code"][0])))
        else:
            node = capture["constant"][0]
            message = _message(file, node, arguments.named_children)
            if message is None or not any(" " in _jvm.template_of(v) for v in message.variants):
                continue  # a constant's own name as its text is no message
            code = text(capture["code"][0])
            error_class = None
            for argument in arguments.named_children:
                if argument.type == "method_reference" and text(argument).endswith("::new"):
                    error_class = text(argument)[: -len("::new")].rsplit(".", 1)[-1]
            enum = _jvm.qualified_name(node, _SCOPES)
            found.append(
                _jvm.Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE,
                    f"{text(capture['enum'][0])}.{code}",
                    error_class=error_class,
                    error_code=code,
                    function=f"{enum}.{code}",
                )
            )
    return found


def sites(path: str, source: str) -> list[Site]:
    """Every error site of one Java file, in source order."""
    file = _File(_jvm.parse("java", source.encode("utf-8")))
    return _jvm.to_sites(path, _candidates(file), _PLACEHOLDERS, _SCOPES)
