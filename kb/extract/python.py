"""Error sites in Python source files (tree-sitter); see `kb.extract`.

What is a site: ``raise X(...)``; an ``XError(...)``/``XException(...)``/``XWarning(...)``
construction anywhere (returned, passed on, kept); a logger's ``error``/``exception``/
``critical``/``warning`` call; ``warnings.warn`` and SQLAlchemy's ``util.warn*``.

What is its message: the string literal argument (implicit and ``+`` concatenation, the
non-literal parts of a ``+`` written ``{}``), through ``%``, ``.format(...)``, f-strings
(``{expr}`` kept as written) and gettext wrappers (``_("...")``). A message held in a
variable is followed back through the function's assignments (`_Flow`), one site per
variant that reaches the raise; a name the function does not bind is looked up in the
enclosing functions, then the module (a message kept in a constant).

A message with fewer than `MIN_LITERAL_CHARS` characters of its own text (``"%s: %s"``,
``str(e)``) says nothing a person could search for, and gives no site.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

import tree_sitter_python
from tree_sitter import Node

from kb.extract import _ts
from kb.extract.sites import MIN_LITERAL, ErrorType, Notation, Severity, Site

__all__ = ["MIN_LITERAL_CHARS", "literal_chars", "sites"]

#: A message with fewer characters of fixed text than this gives no site (the dataset's
#: bound, `kb.extract.sites.MIN_LITERAL`).
MIN_LITERAL_CHARS = MIN_LITERAL
#: How many variants of one message (branches times ``+=`` endings) are kept: past it,
#: the rest are dropped rather than let one generated function blow up the file's cost.
MAX_VARIANTS = 32

#: How deep an expression or a block is read: deeper (only generated or hostile code nests
#: so far) counts as not literal, so no input can exhaust the interpreter's stack.
MAX_NESTING = 64
#: How many statements one file's variable following may step through in all: a function
#: of thousands of statements raising the same variable thousands of times stays linear.
MAX_FLOW_STEPS = 100_000

_GRAMMAR = tree_sitter_python.language

# The raise sites, then every call whose callee reads like an exception class, a logger
# method or a warning function (the regex runs in C, so most calls never reach Python).
_CALLEE = "|".join(
    (
        r"[A-Za-z0-9_]*[A-Za-z0-9]_?(Error|Exception|Warning)",  # an exception class
        r"[A-Za-z_.]*\.(error|exception|critical|fatal|warning|warn)",  # a logger's method
        r"(warnings|util|langhelpers)\.warn[a-z_]*",  # warnings.warn, SQLAlchemy's util.warn*
        r"_?warn(_deprecated|_limited|_deprecated_limited)?",  # the same, imported by name
    )
)
_QUERY = f"""
(raise_statement . (call function: (_) @callee arguments: (argument_list) @args) @call)
(call
  function: [(identifier) (attribute)] @callee
  arguments: (argument_list) @args
  (#match? @callee "(^|\\\\.)({_CALLEE.replace("\\", "\\\\")})$")) @call
"""

# Callee forms, told apart in Python once the query has narrowed the calls down.
_CLASS = re.compile(r"(?:^|\.)([A-Za-z0-9_]*[A-Za-z0-9]_?(?:Error|Exception|Warning))$")
_LOG_METHOD = re.compile(r"^(.*)\.(error|exception|critical|fatal|warning|warn)$")
_RESPONSE = re.compile(r"(?:^|\.)HttpResponse\w*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
# The receiver of a logger call, by its last name: ``logger``, ``log``, ``_log``, ``logging``,
# ``self.logger``, ``pool_logger``, ``LOG`` (not ``dialog`` or ``catalog``).
_LOGGER = re.compile(r"(^|_)log(ger|ging)?(_|$)|logger$", re.IGNORECASE)
_WARN = re.compile(r"^(?:(?:warnings|util|langhelpers)\.)?_?warn(?:_[a-z_]+)?$")
_GETTEXT = frozenset(
    {
        "_",
        "gettext",
        "gettext_lazy",
        "gettext_noop",
        "ugettext",
        "ugettext_lazy",
        "ngettext",
        "ngettext_lazy",
        "pgettext",
        "pgettext_lazy",
        "npgettext",
        "npgettext_lazy",
        "_lazy",
    }
)
#: Keyword arguments that carry the message when no positional one does.
_MESSAGE_KEYWORDS = frozenset(
    {"msg", "message", "reason", "detail", "details", "error", "error_message", "text", "desc"}
)
#: Variable names read as a message when one is passed in a position other than the first.
_MESSAGE_NAME = re.compile(r"(^|_)(msg|message|messages|reason|err_?msg|error_?text|text)$")
# Placeholders of both Python notations, to count the fixed text around them.
_BRACES = r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}"
_PLACEHOLDERS = {
    Notation.PLAIN: re.compile(r"\{\}"),
    Notation.PYTHON_PERCENT: re.compile(r"\{\}|%(?:\([^()]*\))?[-+ #0-9.*]*[a-zA-Z%]"),
    Notation.PYTHON_FORMAT: re.compile(_BRACES + r"|%(?:\([^()]*\))?[-+ #0-9.*]*[a-zA-Z%]"),
}
_ESCAPE = re.compile(
    r"\\(\n|[\\'\"abfnrtv]|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\})"
)
_SIMPLE_ESCAPES = {**_ts.C_ESCAPES, "\n": ""}  # a backslash-newline joins two lines
_FUNCTIONS = frozenset({"function_definition", "class_definition"})
_TERMINATORS = frozenset(
    {"return_statement", "raise_statement", "continue_statement", "break_statement"}
)

node_text = _ts.text


def literal_chars(template: str, notation: Notation = Notation.PYTHON_FORMAT) -> int:
    """How many characters of ``template`` are its own text, the placeholders of its
    ``notation`` and the whitespace around them left out."""
    return len(_PLACEHOLDERS[notation].sub("", template).strip())


@dataclass(frozen=True, slots=True)
class _Message:
    """One variant of a message: its template and the notations its placeholders use."""

    template: str
    percent: bool = False  # filled by ``%`` (or a logger's arguments, or ``params=``)
    braces: bool = False  # filled by ``.format`` or an f-string's fields

    def __add__(self, other: _Message) -> _Message:
        return _Message(
            self.template + other.template,
            self.percent or other.percent,
            self.braces or other.braces,
        )

    @property
    def notation(self) -> Notation:
        if self.braces:
            return Notation.PYTHON_FORMAT
        if self.percent:
            return Notation.PYTHON_PERCENT
        return Notation.PLAIN


_HOLE = _Message("{}")


def sites(path: str, text: str) -> list[Site]:
    """Every error site of one Python file, in source order."""
    tree = _ts.parse(_GRAMMAR, text)
    root = tree.root_node
    found: list[Site] = []
    seen_calls: set[int] = set()
    # A message variable raised (or logged, then raised) at several places is one site,
    # at its first raise: (function start, variable, template) -> index in ``found``.
    held: dict[tuple[int, str, str], int] = {}
    budget = _Budget(root.text or b"")
    for _pattern, captured in _ts.matches(_ts.query(_GRAMMAR, _QUERY), root):
        call = captured["call"][0]
        if call.start_byte in seen_calls:
            continue
        seen_calls.add(call.start_byte)
        for site, variable in _call_sites(path, root, call, captured["callee"][0], budget):
            if variable is None:
                found.append(site)
                continue
            scope = _enclosing_function(call)
            key = (scope.start_byte if scope else -1, variable, " ".join(site.template.split()))
            at = held.get(key)
            if at is None:
                held[key] = len(found)
                found.append(site)
            elif found[at].error_type is ErrorType.LOG and site.error_type is not ErrorType.LOG:
                found[at] = site
    found.sort(key=lambda s: (s.line, s.end_line))
    return found


def _call_sites(
    path: str, root: Node, call: Node, callee: Node, budget: _Budget
) -> Iterator[tuple[Site, str | None]]:
    """The sites of one call (several when its message has variants), each with the name
    of the variable the message was held in (``None`` when written in the call)."""
    name = node_text(callee)
    raised = call.parent is not None and call.parent.type == "raise_statement"
    cls = _CLASS.search(name)
    log = _LOG_METHOD.match(name)
    severity = Severity.ERROR
    error_class: str | None = None
    logged = False
    if _RESPONSE.search(name):
        return  # an HTTP response's body is a page, not a message
    if raised or cls is not None:
        error_type = ErrorType.EXCEPTION
        last = name.rsplit(".", 1)[-1]
        if _DOTTED.match(name) and last[:1].isupper():
            # ``self.error(...)``, ``exc_cls(...)``: a factory or a variable, not a class
            error_class = last
        if cls is not None and cls.group(1).endswith("Warning"):
            severity = Severity.WARNING
    elif _WARN.match(name):
        error_type = ErrorType.LOG
        severity = Severity.WARNING
        # SQLAlchemy's warn_limited(msg, args) fills the message with % itself.
        logged = name.endswith("_limited")
    elif log is not None and _LOGGER.search(log.group(1).rsplit(".", 1)[-1]):
        error_type = ErrorType.LOG
        severity = Severity.WARNING if log.group(2) in ("warning", "warn") else Severity.ERROR
        logged = True
    else:
        return
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return
    candidates, keywords = _message_arguments(arguments)
    error_code = None
    code = keywords.get("code")
    if code is not None and code.type == "string" and not _is_fstring(code):
        error_code = _string_value(code)
        error_type = ErrorType.ERROR_CODE
    chosen = _first_message(
        _Resolver(root, call, budget), candidates, logged=logged, params="params" in keywords
    )
    if chosen is None:
        return
    message, variants = chosen
    variable = _held_in(message)
    line = (call.parent if raised and call.parent is not None else call).start_point.row + 1
    function = _qualified_name(call)
    for variant in variants:
        yield (
            Site(
                path=path,
                line=line,
                end_line=call.end_point.row + 1,
                template=variant.template,
                notation=variant.notation,
                error_type=error_type,
                severity=severity,
                error_class=error_class,
                error_code=error_code,
                function=function,
                call=("raise " + name) if raised else name,
            ),
            variable,
        )


def _first_message(
    resolver: _Resolver, candidates: list[tuple[Node, bool]], *, logged: bool, params: bool
) -> tuple[Node, list[_Message]] | None:
    """The first candidate argument with a message long enough to keep, and its variants.
    A logger fills ``%`` placeholders when values follow the message, Django's
    ``ValidationError`` when it has ``params``."""
    for message, followed in candidates:
        percent = (logged and followed) or params
        variants = []
        for variant in resolver.message(message):
            if percent and not variant.percent:
                variant = replace(variant, percent=True)
            if literal_chars(variant.template, variant.notation) >= MIN_LITERAL_CHARS:
                variants.append(variant)
        if variants:
            return message, variants
    return None


def _held_in(message: Node) -> str | None:
    """The variable a message argument reads (``msg``, ``msg % args``, ``msg.format(...)``)."""
    inner = _unwrap(message)
    if inner.type == "binary_operator" and _operator(inner) == "%":
        inner = _unwrap(inner.child_by_field_name("left"))
    elif inner.type == "call":
        function = inner.child_by_field_name("function")
        if function is not None and function.type == "attribute":
            inner = _unwrap(function.child_by_field_name("object"))
    return node_text(inner) if inner.type == "identifier" else None


def _message_arguments(arguments: Node) -> tuple[list[tuple[Node, bool]], dict[str, Node]]:
    """The arguments that may hold the message, in the order they are tried, each with
    whether positional arguments follow it (a logger's ``%`` values); and the keyword
    arguments by name. The first positional argument comes first, then any other that
    writes a literal or whose name reads like a message, then message-like keywords."""
    positional: list[Node] = []
    keywords: dict[str, Node] = {}
    for child in arguments.named_children:
        if child.type == "keyword_argument":
            key = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if key is not None and value is not None:
                keywords[node_text(key)] = value
        elif child.type not in ("comment", "list_splat", "dictionary_splat"):
            positional.append(child)
    candidates: list[tuple[Node, bool]] = []
    for index, argument in enumerate(positional):
        if (index == 0 and (_has_literal(argument) or _followable(argument))) or (
            index > 0 and (_has_literal(argument) or _reads_as_message(argument))
        ):
            candidates.append((argument, index + 1 < len(positional)))
    for keyword in sorted(_MESSAGE_KEYWORDS & keywords.keys()):
        candidates.append((keywords[keyword], False))
    return candidates, keywords


def _terms(node: Node) -> list[Node]:
    """The operands of a chain of ``+`` (``a + b + c`` nests to the left), read without
    recursion however long the chain."""
    terms: list[Node] = []
    while node.type == "binary_operator" and _operator(node) == "+":
        right = node.child_by_field_name("right")
        left = node.child_by_field_name("left")
        if right is None or left is None:
            break
        terms.append(right)
        node = left
    terms.append(node)
    terms.reverse()
    return terms


def _has_literal(node: Node | None, depth: int = 0) -> bool:
    """Whether the expression writes a string literal of its own (not inside a call other
    than ``.format`` or gettext)."""
    if node is None or depth >= MAX_NESTING:
        return False
    node = _unwrap(node)
    kind = node.type
    depth += 1
    if kind in ("string", "concatenated_string"):
        return True
    if kind == "binary_operator":
        if _operator(node) == "+":
            return any(_has_literal(term, depth) for term in _terms(node))
        return _operator(node) == "%" and _has_literal(node.child_by_field_name("left"), depth)
    if kind == "conditional_expression":
        return any(
            _has_literal(child, depth)
            for child in node.named_children[:1] + node.named_children[2:]
        )
    if kind == "call":
        function = node.child_by_field_name("function")
        if function is None:
            return False
        if (
            function.type == "attribute"
            and node_text(function.child_by_field_name("attribute")) == "format"
        ):
            return _has_literal(function.child_by_field_name("object"), depth)
        if function.type == "identifier" and node_text(function) in _GETTEXT:
            args = node.child_by_field_name("arguments")
            return bool(
                args and args.named_children and _has_literal(args.named_children[0], depth)
            )
    return False


def _followable(node: Node) -> bool:
    """Whether a first argument without literal text may still name a message (a variable,
    formatted or not)."""
    node = _unwrap(node)
    if node.type == "identifier":
        return True
    if node.type == "binary_operator" and _operator(node) == "%":
        return _unwrap(node.child_by_field_name("left")).type == "identifier"
    if node.type == "call":
        function = node.child_by_field_name("function")
        return (
            function is not None
            and function.type == "attribute"
            and node_text(function.child_by_field_name("attribute")) == "format"
            and _unwrap(function.child_by_field_name("object")).type == "identifier"
        )
    return False


def _reads_as_message(node: Node) -> bool:
    node = _unwrap(node)
    return node.type == "identifier" and _MESSAGE_NAME.search(node_text(node)) is not None


def _unwrap(node: Node | None) -> Node:
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    assert node is not None
    return node


def _operator(node: Node) -> str:
    operator = node.child_by_field_name("operator")
    return node_text(operator)


def _is_fstring(node: Node) -> bool:
    start = node.child(0)
    return start is not None and "f" in node_text(start).lower()


def _string_value(node: Node) -> str:
    """A plain string literal's value (escapes decoded, as Python reads it)."""
    return "".join(part.template for part in _string(node))


def _string(node: Node) -> list[_Message]:
    """One string literal, as a template: an f-string's fields kept as written."""
    start = node.child(0)
    prefix = node_text(start).lower() if start is not None else ""
    raw = "r" in prefix
    fstring = "f" in prefix or "t" in prefix
    parts: list[str] = []
    braces = False
    for child in node.children:
        kind = child.type
        if kind == "string_content":
            parts.append(_decode(node_text(child), raw))
        elif kind == "interpolation":
            parts.append(node_text(child))
            braces = True
    value = "".join(parts)
    if fstring and not braces:
        # An f-string without fields is a plain string: its {{ }} are single braces.
        value = value.replace("{{", "{").replace("}}", "}")
    return [_Message(value, braces=braces)]


def _decode(content: str, raw: bool) -> str:
    if raw or "\\" not in content:
        return content
    return _ESCAPE.sub(_unescape, content)


def _unescape(match: re.Match[str]) -> str:
    """The character an escape stands for; an escape Python would refuse (past the last
    code point, an unknown name) or one no database text column holds (NUL, a lone
    surrogate) stays as written."""
    body = match.group(1)
    simple = _SIMPLE_ESCAPES.get(body)
    if simple is not None:
        return simple
    if body[0] == "N":
        try:
            return unicodedata.lookup(body[2:-1])
        except KeyError:
            return match.group(0)
    point = int(body[1:], 16) if body[0] in "xuU" else int(body, 8)
    if point == 0 or 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
        return match.group(0)
    return chr(point)


def _enclosing_function(node: Node) -> Node | None:
    parent = node.parent
    while parent is not None:
        if parent.type == "function_definition":
            return parent
        parent = parent.parent
    return None


def _qualified_name(node: Node) -> str:
    """``Class.method``, ``outer.inner``: the definitions around ``node``, outermost first."""
    names: list[str] = []
    parent = node.parent
    while parent is not None:
        if parent.type in _FUNCTIONS:
            names.append(node_text(parent.child_by_field_name("name")))
        parent = parent.parent
    return ".".join(reversed(names))


def _join(messages: list[_Message]) -> _Message:
    return _Message(
        "".join(message.template for message in messages),
        any(message.percent for message in messages),
        any(message.braces for message in messages),
    )


def _product(lefts: list[_Message], rights: list[_Message]) -> list[_Message]:
    out: list[_Message] = []
    for left in lefts:
        for right in rights:
            out.append(left + right)
            if len(out) >= MAX_VARIANTS:
                return out
    return out


def _union(*groups: Iterable[_Message]) -> list[_Message]:
    out: dict[str, _Message] = {}
    for group in groups:
        for message in group:
            out.setdefault(message.template, message)
    return list(out.values())[:MAX_VARIANTS]


class _Budget:
    """One file's variable following: what it may still spend, and where each name is
    written (so a statement that never mentions the name costs a binary search)."""

    __slots__ = ("_mentions", "settled", "source", "steps")

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.steps = MAX_FLOW_STEPS
        self._mentions: dict[str, list[int]] = {}
        # What a name holds in a scope whatever reads it: (scope start, name) -> values.
        self.settled: dict[tuple[int, str], list[_Message] | None] = {}

    def mentions(self, name: str, node: Node) -> bool:
        """Whether ``name`` is written as a word inside ``node``."""
        positions = self._mentions.get(name)
        if positions is None:
            word = re.compile(rb"(?<![\w])" + re.escape(name.encode()) + rb"(?![\w])")
            positions = self._mentions[name] = [m.start() for m in word.finditer(self.source)]
        at = bisect_left(positions, node.start_byte)
        return at < len(positions) and positions[at] < node.end_byte


class _Resolver:
    """The variants of one call's message, following variables back from the call."""

    def __init__(self, root: Node, call: Node, budget: _Budget) -> None:
        self.root = root
        self.call = call
        self.budget = budget
        self.depth = 0  # names being looked up, one inside another
        self.nesting = 0  # expressions being read, one inside another

    def message(self, node: Node) -> list[_Message]:
        return self.build(node, follow=True, at=self.call) or []

    def build(
        self,
        node: Node | None,
        *,
        follow: bool,
        at: Node,
        own: tuple[str, list[_Message]] | None = None,
    ) -> list[_Message] | None:
        """The variants of expression ``node`` (``None``: nothing literal in it). ``follow``
        says whether a bare name is looked up (the message position) or is a hole (a
        part of a concatenation); ``own`` is the value a name had before the assignment
        being read (``msg = msg + "..."``)."""
        if node is None or self.nesting >= MAX_NESTING:
            return None
        self.nesting += 1
        try:
            return self._build(node, follow=follow, at=at, own=own)
        finally:
            self.nesting -= 1

    def _build(
        self,
        node: Node,
        *,
        follow: bool,
        at: Node,
        own: tuple[str, list[_Message]] | None,
    ) -> list[_Message] | None:
        kind = node.type
        if kind == "parenthesized_expression":
            return self.build(
                node.named_children[0] if node.named_children else None,
                follow=follow,
                at=at,
                own=own,
            )
        if kind == "string":
            return _string(node)
        if kind == "concatenated_string":
            out = [_Message("")]
            for part in node.named_children:
                if part.type == "string":
                    out = _product(out, _string(part))
            return out
        if kind == "binary_operator":
            operator = _operator(node)
            left = node.child_by_field_name("left")
            if operator == "+":
                parts = [self.build(term, follow=False, at=at, own=own) for term in _terms(node)]
                if all(variants is None for variants in parts):
                    return None
                if all(variants is None or len(variants) == 1 for variants in parts):
                    return [_join([variants[0] if variants else _HOLE for variants in parts])]
                out = [_Message("")]
                for variants in parts:
                    out = _product(out, variants or [_HOLE])
                return out
            if operator == "%":
                lefts = self.build(left, follow=follow, at=at, own=own)
                if lefts is None:
                    return None
                return [replace(message, percent=True) for message in lefts]
            return None
        if kind == "conditional_expression":
            if not follow:
                return None  # a part of a concatenation: a hole, as the dataset writes it
            children = node.named_children
            if len(children) < 3:
                return None
            sides = [
                self.build(children[0], follow=follow, at=at, own=own),
                self.build(children[2], follow=follow, at=at, own=own),
            ]
            if all(side is None for side in sides):
                return None
            return _union(*(side or [_HOLE] for side in sides))
        if kind == "call":
            return self.build_call(node, follow=follow, at=at, own=own)
        if kind == "identifier":
            name = node_text(node)
            if own is not None and name == own[0]:
                return own[1]
            if follow:
                return self.lookup(name, at)
            return None
        return None

    def build_call(
        self, node: Node, *, follow: bool, at: Node, own: tuple[str, list[_Message]] | None
    ) -> list[_Message] | None:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is None or arguments is None:
            return None
        if function.type == "attribute":
            if node_text(function.child_by_field_name("attribute")) != "format":
                return None
            inner = self.build(
                function.child_by_field_name("object"), follow=follow, at=at, own=own
            )
            if inner is None:
                return None
            return [replace(message, braces=True) for message in inner]
        if function.type == "identifier" and node_text(function) in _GETTEXT:
            args = [a for a in arguments.named_children if a.type != "keyword_argument"]
            if not args:
                return None
            # pgettext(context, message): the message is the second argument.
            first = (
                args[1]
                if node_text(function).startswith(("pgettext", "npgettext")) and len(args) > 1
                else args[0]
            )
            return self.build(first, follow=follow, at=at, own=own)
        return None

    def lookup(self, name: str, at: Node) -> list[_Message] | None:
        """The variants of ``name`` where ``at`` reads it: the assignments of the function
        around ``at`` on the paths that reach it; else every value the enclosing functions
        give it (a closure runs later, after any of them); else the module's."""
        if self.depth > 4:
            return None
        self.depth += 1
        try:
            scope = _enclosing_function(at)
            if scope is not None:
                body = scope.child_by_field_name("body")
                if body is not None:
                    flow = _Flow(self, name, at)
                    flow.run(body.named_children, None)
                    if flow.assigned:
                        return _union(flow.reached) if flow.reached else None
                if _binds_parameter(scope, name):
                    return None
                scope = _enclosing_function(scope)
            return self.anywhere(name, scope)
        finally:
            self.depth -= 1

    def anywhere(self, name: str, scope: Node | None) -> list[_Message] | None:
        """Every value ``name`` is given in ``scope`` (the module for ``None``), else in the
        scopes around it; the same for every read, so kept once per file."""
        key = (scope.start_byte if scope is not None else -1, name)
        settled = self.budget.settled
        if key in settled:
            return settled[key]
        values: list[_Message] | None = None
        if scope is None:
            flow = _Flow(self, name, None)
            flow.run(self.root.named_children, None)
            values = _union(flow.collected) if flow.collected else None
        else:
            body = scope.child_by_field_name("body")
            flow = _Flow(self, name, None)
            if body is not None:
                flow.run(body.named_children, None)
            if flow.assigned:
                values = _union(flow.collected) if flow.collected else None
            elif not _binds_parameter(scope, name):
                values = self.anywhere(name, _enclosing_function(scope))
        settled[key] = values
        return values


def _binds_parameter(function: Node, name: str) -> bool:
    parameters = function.child_by_field_name("parameters")
    if parameters is None:
        return False
    for parameter in parameters.named_children:
        target = (
            parameter if parameter.type == "identifier" else parameter.child_by_field_name("name")
        )
        if target is None and parameter.named_children:
            target = parameter.named_children[0]
        if target is not None and node_text(target) == name:
            return True
    return False


_TERM: list[_Message] = []


class _Flow:
    """The values one name may hold when control reaches ``target``, statement by
    statement: ``if``/``else`` branches give a variant each (a branch that ends in
    ``return``/``raise`` gives none), loops run once, and a statement that does not
    mention the name is skipped unread."""

    def __init__(self, resolver: _Resolver, name: str, target: Node | None) -> None:
        self.resolver = resolver
        self.name = name
        self.target = target
        self.reached: list[_Message] | None = None
        self.assigned = False
        self.nesting = 0  # blocks being read, one inside another
        # Every value assigned anywhere on the way, for a name read by a closure.
        self.collected: list[_Message] = []

    def run(self, statements: list[Node], state: list[_Message] | None) -> list[_Message] | None:
        """The state after ``statements`` (``_TERM`` when every path left); sets
        ``reached`` when the target is met on the way."""
        target = self.target
        budget = self.resolver.budget
        if self.nesting >= MAX_NESTING:
            return None
        self.nesting += 1
        try:
            for statement in statements:
                if state is _TERM:
                    return _TERM
                budget.steps -= 1
                if budget.steps < 0:
                    return None
                if (
                    target is not None
                    and statement.start_byte <= target.start_byte < statement.end_byte
                ):
                    self.reach(statement, state)
                    return _TERM
                if statement.type in _TERMINATORS:
                    return _TERM
                if budget.mentions(self.name, statement):
                    state = self.statement(statement, state)
            return state
        finally:
            self.nesting -= 1

    def reach(self, statement: Node, state: list[_Message] | None) -> None:
        """Follow the one block of ``statement`` that holds the target."""
        target = self.target
        assert target is not None
        if self.nesting >= MAX_NESTING:
            self.reached = []
            return
        self.nesting += 1
        try:
            self._reach(statement, state, target)
        finally:
            self.nesting -= 1

    def _reach(self, statement: Node, state: list[_Message] | None, target: Node) -> None:
        for block in _blocks(statement):
            if block.start_byte <= target.start_byte < block.end_byte:
                if block.type == "block":
                    self.run(block.named_children, state)
                else:
                    self.reach(block, state)
                if self.reached is not None:
                    return
        if self.reached is None:
            self.reached = state or []

    def statement(self, statement: Node, state: list[_Message] | None) -> list[_Message] | None:
        kind = statement.type
        if kind == "expression_statement":
            for expression in statement.named_children:
                state = self.expression(expression, state)
            return state
        if kind == "if_statement":
            branches: list[list[_Message] | None] = []
            has_else = False
            consequence = statement.child_by_field_name("consequence")
            if consequence is not None:
                branches.append(self.run(consequence.named_children, state))
            for clause in statement.named_children:
                if clause.type in ("elif_clause", "else_clause"):
                    has_else = has_else or clause.type == "else_clause"
                    body = clause.child_by_field_name("consequence") or clause.child_by_field_name(
                        "body"
                    )
                    if body is not None:
                        branches.append(self.run(body.named_children, state))
            if not has_else:
                branches.append(state)
            return self.join(branches)
        if kind in ("for_statement", "while_statement", "with_statement"):
            body = statement.child_by_field_name("body")
            if body is None:
                return state
            after = self.run(body.named_children, state)
            return state if after is _TERM else after
        if kind == "try_statement":
            body = statement.child_by_field_name("body")
            after = self.run(body.named_children, state) if body is not None else state
            branches = [after]
            for clause in statement.named_children:
                if clause.type == "except_clause":
                    block = clause.named_children[-1] if clause.named_children else None
                    if block is not None and block.type == "block":
                        branches.append(self.run(block.named_children, state))
            return self.join(branches)
        if kind == "match_statement":
            body = statement.child_by_field_name("body")
            cases = body.named_children if body is not None else []
            branches = [state]
            for case in cases:
                block = case.child_by_field_name("consequence")
                if block is not None:
                    branches.append(self.run(block.named_children, state))
            return self.join(branches)
        return state

    def join(self, branches: list[list[_Message] | None]) -> list[_Message] | None:
        live = [branch for branch in branches if branch is not _TERM]
        if not live:
            return _TERM
        known = [branch for branch in live if branch]
        if not known:
            return None
        return _union(*known)

    def expression(self, node: Node, state: list[_Message] | None) -> list[_Message] | None:
        if node.type == "assignment":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if left is None or node_text(left) != self.name:
                return state
            self.assigned = True
            if right is None:
                return state
            if right.type == "assignment":  # a = b = "..."
                while right is not None and right.type == "assignment":
                    right = right.child_by_field_name("right")
            own = (self.name, state or [_HOLE])
            value = self.resolver.build(right, follow=True, at=node, own=own)
            self.collected.extend(value or ())
            return value
        if node.type == "augmented_assignment":
            left = node.child_by_field_name("left")
            if left is None or node_text(left) != self.name:
                return state
            if _operator(node) == "%=":  # message %= (values): the same text, now filled
                return [replace(message, percent=True) for message in state] if state else state
            if _operator(node) != "+=":
                return state
            self.assigned = True
            added = self.resolver.build(node.child_by_field_name("right"), follow=False, at=node)
            value = _product(state or [_HOLE], added or [_HOLE])
            self.collected.extend(value)
            return value
        return state


def _blocks(statement: Node) -> Iterator[Node]:
    """The nested blocks and clauses of a compound statement (none when simple)."""
    for child in statement.named_children:
        if child.type in ("block", "with_statement") or child.type.endswith("_clause"):
            yield child
