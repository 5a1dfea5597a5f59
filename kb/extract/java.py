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
from dataclasses import dataclass, field

from tree_sitter import Node

from kb.extract import _jvm
from kb.extract._jvm import HOLE, MIN_LITERAL, Variant, text
from kb.extract.sites import ErrorType, Notation, Severity, Site

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

#: Names of local variables that hold a message (followed back to their assignments).
_MESSAGE_NAME = re.compile(
    r"(?i)msg|message|err|reason|description|detail|^str$|string$|format$|text$"
)
#: Logger receivers: ``log``, ``LOG``, ``logger``, ``this.log``, ``stateChangeLogger``.
_LOGGER = re.compile(r"(?i)log(ger)?$")
#: How deep a variable or constant is followed through others (``a = b; b = A``).
_MAX_DEPTH = 4
_LOG_SEVERITY = {"error": Severity.ERROR, "warn": Severity.WARNING, "fatal": Severity.FATAL}

_PRINTF = re.compile(r"%(?:\d+\$)?[-#+ 0,(<]*\d*(?:\.\d+)?[a-zA-Z%]|%n")
_MESSAGE_FORMAT = re.compile(r"\{\d+(?:,[^{}]*)?\}")
_SLF4J = re.compile(r"\{\}")
_PLACEHOLDERS = {
    Notation.PRINTF: _PRINTF,
    Notation.JAVA_MESSAGE_FORMAT: _MESSAGE_FORMAT,
    Notation.SLF4J: _SLF4J,
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


@dataclass
class _Message:
    """A message argument read: its variants, its notation, and the variable it was read
    from (``None`` when written in the call)."""

    variants: list[Variant]
    notation: Notation = Notation.PLAIN
    variable: str | None = None
    scope: int = -1  # where the variable's method starts (overloads share a name)


@dataclass
class _File:
    path: str
    root: Node
    _constants: dict[str, Node] | None = field(default=None)
    _assignments: dict[tuple[int, int], dict[str, list[tuple[Node, bool]]]] = field(
        default_factory=dict
    )

    def assignments(self, scope: Node) -> dict[str, list[tuple[Node, bool]]]:
        """The values given to each local name in ``scope``, in source order, each with
        whether it is a plain ``=`` (not ``+=``); read once per method."""
        key = (scope.start_byte, scope.end_byte)
        found = self._assignments.get(key)
        if found is None:
            found = {}
            for _, capture in _jvm.matches("java", _ASSIGNMENTS, scope):
                assign = capture.get("assign")
                plain = not assign or text(assign[0].child_by_field_name("operator")) == "="
                found.setdefault(text(capture["name"][0]), []).append((capture["value"][0], plain))
            for values in found.values():
                values.sort(key=lambda pair: pair[0].start_byte)
            self._assignments[key] = found
        return found

    def constants(self) -> dict[str, Node]:
        """The file's ``final`` fields by name (their initialisers), read once."""
        if self._constants is None:
            self._constants = {}
            for _, capture in _jvm.matches("java", _CONSTANTS, self.root):
                name = text(capture["name"][0])
                self._constants.setdefault(name, capture["value"][0])
        return self._constants


class _Render:
    """Reads one message argument into its variants."""

    def __init__(self, file: _File, site: Node, *, constants: bool = True) -> None:
        self.file = file
        self.constants = constants
        self.site = site
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
        if kind == "ternary_expression":
            variants: list[Variant] = []
            for side in ("consequence", "alternative"):
                branch = node.child_by_field_name(side)
                if branch is not None:
                    variants.extend(self.top(branch))
            return variants[: _jvm.MAX_VARIANTS]
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.top(node.named_children[0])
        if kind == "lambda_expression":  # a message supplier: () -> "…" + x
            body = node.child_by_field_name("body")
            if body is not None and body.type != "block":
                return self.top(body)
            return [(HOLE,)]
        if kind == "identifier":
            name = text(node)
            if _MESSAGE_NAME.search(name):
                followed = self.follow(name)
                if followed:
                    if self.variable is None:
                        self.variable = name
                        scope = self.scope_of()
                        self.scope = scope.start_byte if scope is not None else -1
                    return followed
            return self.constant(node, name)
        if kind == "field_access":
            return self.constant(node, text(node.child_by_field_name("field")))
        return self.part(node)

    def constant(self, node: Node, name: str) -> list[Variant]:
        """The value of a ``final`` field of the file used as the whole message."""
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
        if kind == "string_literal":
            return [(_string(node),)]
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
        if kind == "method_invocation":
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

    def scope_of(self) -> Node | None:
        """The method (or lambda, initializer) the site is in."""
        scope = self.site.parent
        while scope is not None and scope.type not in _BODIES:
            scope = scope.parent
        return scope

    def follow(self, name: str) -> list[Variant]:
        """The values a message-like local variable is given before the site, in its
        method: one variant per assignment, none when it is built with ``+=``."""
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
                if _abandoned(value, self.site):
                    continue
                variants.extend(self.top(value))
            return [v for v in variants if v != (HOLE,)][: _jvm.MAX_VARIANTS]
        finally:
            self.depth -= 1


def _is_plus(node: Node) -> bool:
    return node.type == "binary_expression" and text(node.child_by_field_name("operator")) == "+"


def _inside(node: Node, ancestor: Node) -> bool:
    return ancestor.start_byte <= node.start_byte and node.end_byte <= ancestor.end_byte


def _abandoned(value: Node, site: Node) -> bool:
    """Whether ``value`` is assigned in a block that ends in ``throw``/``return`` and does
    not hold the site: that message is used there, not at the site."""
    block = value.parent
    while block is not None and block.type != "block":
        block = block.parent
    if block is None or _inside(site, block) or block.named_child_count == 0:
        return False
    return block.named_children[-1].type in ("throw_statement", "return_statement")


def _string(node: Node) -> str:
    raw = text(node)
    if raw.startswith('"""'):
        return _jvm.decode_escapes(_jvm.dedent_text_block(raw[3:-3]))
    return _jvm.decode_escapes(raw[1:-1])


def _has_literal(variants: list[Variant]) -> bool:
    return any(isinstance(part, str) and part for variant in variants for part in variant)


def _long_enough(variants: list[Variant], notation: Notation) -> bool:
    placeholder = _PLACEHOLDERS.get(notation)
    return any(_jvm.literal_length(v, placeholder) >= MIN_LITERAL for v in variants)


def _simple_name(type_node: Node) -> str:
    name = text(type_node).split("<", 1)[0]
    return name.rsplit(".", 1)[-1].strip()


def _message(
    file: _File, site: Node, arguments: list[Node], *, nested: bool = True
) -> _Message | None:
    """The first argument that holds literal text, read into its variants; failing that,
    the first naming a constant of the file; failing that, the message of a call among
    the arguments (``new X(formatException("…"))``, ``newFailure("…")``)."""
    for constants in (False, True):
        for argument in arguments:
            render = _Render(file, site, constants=constants)
            variants = render.top(argument)
            if _long_enough(variants, render.notation):
                return _Message(variants, render.notation, render.variable, render.scope)
    if nested:
        for argument in arguments:
            if argument.type == "method_invocation":
                inner = argument.child_by_field_name("arguments")
                if inner is not None:
                    message = _message(file, site, inner.named_children, nested=False)
                    if message is not None:
                        return message
    return None


def _errors_code(arguments: Node) -> str | None:
    """``X`` of an ``Errors.X`` argument (Kafka's ``new ApiError(Errors.X, "…")``)."""
    for argument in arguments.named_children:
        if argument.type == "field_access" and text(argument.child_by_field_name("object")) == (
            "Errors"
        ):
            return text(argument.child_by_field_name("field"))
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


def _logger(call: Node) -> bool:
    receiver = call.child_by_field_name("object")
    if receiver is None:
        return False
    if receiver.type == "field_access":
        receiver = receiver.child_by_field_name("field")
    return (
        receiver is not None
        and receiver.type == "identifier"
        and bool(_LOGGER.search(text(receiver)))
    )


@dataclass
class _Candidate:
    node: Node
    message: _Message
    error_type: ErrorType
    severity: Severity
    error_class: str | None
    error_code: str | None
    http_status: int | None
    call: str
    function: str


#: Argument checks that throw their message (``Objects.requireNonNull`` and Guava's
#: ``Preconditions``), with the class thrown; the message follows the checked value.
_CHECKS = {
    "requireNonNull": ("Objects", "NullPointerException"),
    "checkNotNull": ("Preconditions", "NullPointerException"),
    "checkArgument": ("Preconditions", "IllegalArgumentException"),
    "checkState": ("Preconditions", "IllegalStateException"),
}


def _check(file: _File, node: Node, name_node: Node, arguments: Node) -> _Candidate | None:
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
    return _Candidate(
        node,
        message,
        ErrorType.EXCEPTION,
        Severity.ERROR,
        error_class,
        None,
        None,
        f"{receiver}.{name}" if receiver else name,
        _jvm.qualified_name(node, _SCOPES),
    )


def _candidates(file: _File) -> list[_Candidate]:
    found: list[_Candidate] = []
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
            code = _errors_code(arguments)
            thrown = node.parent is not None and node.parent.type == "throw_statement"
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE if code else ErrorType.EXCEPTION,
                    Severity.ERROR,
                    error_class,
                    code,
                    _http_status(arguments, error_class),
                    ("throw new " if thrown else "new ") + error_class,
                    _jvm.qualified_name(node, _SCOPES),
                )
            )
        elif pattern == 2:
            node = capture["log"][0]
            if not _logger(node):
                continue
            message = _message(file, node, arguments.named_children)
            if message is None:
                continue
            if message.notation is Notation.PLAIN:
                message.notation = Notation.SLF4J
            level = text(capture["level"][0])
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.LOG,
                    _LOG_SEVERITY[level],
                    None,
                    None,
                    None,
                    f"{text(node.child_by_field_name('object'))}.{level}",
                    _jvm.qualified_name(node, _SCOPES),
                )
            )
        elif pattern == 3:
            node = capture["errors_exception"][0]
            message = _message(file, node, arguments.named_children)
            if message is None:
                continue
            code = text(capture["code"][0])
            found.append(
                _Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE,
                    Severity.ERROR,
                    None,
                    code,
                    None,
                    f"Errors.{code}.exception",
                    _jvm.qualified_name(node, _SCOPES),
                )
            )
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
                _Candidate(
                    node,
                    message,
                    ErrorType.ERROR_CODE,
                    Severity.ERROR,
                    error_class,
                    code,
                    None,
                    f"{text(capture['enum'][0])}.{code}",
                    f"{enum}.{code}",
                )
            )
    return found


def _first_use(candidates: list[_Candidate]) -> list[_Candidate]:
    """One site per message variable of a method: its first ``throw`` (or ``new``), else
    its first log call, as the dataset does for a message logged and then thrown."""
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
    """Every error site of one Java file, in source order."""
    file = _File(path, _jvm.parse("java", source.encode("utf-8")))
    result: list[Site] = []
    for candidate in _first_use(_candidates(file)):
        placeholder = _PLACEHOLDERS.get(candidate.message.notation)
        templates: list[str] = []
        for variant in candidate.message.variants:
            if _jvm.literal_length(variant, placeholder) < MIN_LITERAL:
                continue
            templates.append(_jvm.template_of(variant))
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
                    http_status=candidate.http_status,
                    function=candidate.function,
                    call=candidate.call,
                )
            )
    return result
