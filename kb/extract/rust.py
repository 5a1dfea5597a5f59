"""Error sites in Rust source files (tree-sitter); see `kb.extract`.

One parse and one query per file: the query (run in C) finds the candidate constructs,
and Python only reads the message out of each candidate. The constructs are those the
dataset's extractor took (its README, "How the records were made"): the anyhow macros and
the project's ``bail_*!`` ones, the panicking macros, tracing/log ``error!``/``warn!``,
thiserror ``#[error("…")]``, ``.context``/``.with_context``/``.expect``, ``Err(format!(…))``
and ``Err("…".into())``, constructors on error types (``ErrorCode::X(…)``,
``XError::new(…)``) and tonic ``Status::code(…)``.

Macro arguments are a token tree to tree-sitter (it cannot know a macro's grammar), so the
message of ``bail!("…", x)`` is found among the tree's tokens; a macro called inside
another macro's tokens (a ``bail!`` in a ``select!`` arm) is found the same way. Code of
``#[cfg(test)]``, ``#[cfg(any(test, ...))]``, ``#[test]`` and ``#[expect(dead_code)]`` items
is left out: nobody pastes a message that only a test build, or no build, can print.
"""

from __future__ import annotations

import re

import tree_sitter_rust
from tree_sitter import Node

from kb.extract import _ts
from kb.extract.sites import MIN_LITERAL, ErrorType, Notation, Severity, Site

__all__ = ["sites"]

#: Sites are matched no deeper than this in the syntax tree. Real code nests far less; a
#: hostile file nested thousands deep would otherwise make the query's work grow with the
#: square of its depth.
MAX_DEPTH = 200

_ANYHOW = frozenset({"bail", "anyhow", "ensure", "format_err"})
_PANICS = frozenset({"panic", "unreachable", "unimplemented", "todo"})
_LOGS = {"error": Severity.ERROR, "warn": Severity.WARNING}
#: First words of a project macro's name that say it logs rather than builds an error.
_LOGGING_PREFIXES = frozenset({"log", "consistency", "trace"})
#: Methods that turn a string literal into an owned string or an error (``"…".into()``).
_OWNING = frozenset({"into", "to_string", "to_owned", "into_boxed_str"})
_NOT_TYPES = frozenset({"lifetime", "line_comment", "block_comment"})
_NAMED_TYPES = frozenset({"type_identifier", "scoped_type_identifier"})
_FROM = frozenset({"String::from", "Cow::from", "Cow::Borrowed", "Box::from"})
#: Crates whose parsers have an ``expect`` of their own that is no panic.
_OWN_EXPECT = re.compile(r"fn\s+expect\b|use\s+(?:winnow|nom|combine|chumsky|pest)\b")
#: An error type's constructor path: ``ErrorCode``, ``MetaError``, ``io::Error``.
_ERROR_PATH = re.compile(r"(?:Error|ErrorCode)$")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_ESCAPE = re.compile(r"\\(?:\n\s*|u\{([0-9a-fA-F]+)\}|x([0-9a-fA-F]{2})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}

#: Macros worth reading: the known ones, and project macros whose name says error, panic
#: or warn (`_project_macro` decides what each does).
# Attributes of items only a test build, or no build, compiles: #[cfg(test)],
# #[cfg(any(test, ...))], #[test] and #[tokio::test], #[expect(dead_code)] (a query regex,
# its backslashes doubled for the query's string).
_TEST_ONLY = (
    r"^#\\s*\\[\\s*(cfg\\s*\\(\\s*(test|any\\s*\\(\\s*test\\s*,)"
    r"|expect\\s*\\(\\s*dead_code|([A-Za-z_]+\\s*::\\s*)*test)"
)
_MACRO_NAMES = "^(" + "|".join(sorted(_ANYHOW | _PANICS | set(_LOGS))) + ")$|_"
_QUERY_SOURCE = r"""
(macro_invocation
  macro: [(identifier) @name (scoped_identifier name: (identifier) @name)]
  (#match? @name "MACRO_NAMES")
  (token_tree) @args) @site
(call_expression
  function: (field_expression field: (field_identifier) @method
    (#any-of? @method "context" "with_context" "expect"))
  arguments: (arguments) @args) @site
(call_expression
  function: (identifier) @err (#eq? @err "Err")
  arguments: (arguments) @args) @site
(call_expression
  function: (scoped_identifier path: (_) @path name: (identifier) @ctor)
  (#match? @path "(Error|ErrorCode|Status)$")
  arguments: (arguments) @args) @site
(attribute_item (attribute (identifier) @attr (#eq? @attr "error")
  arguments: (token_tree) @args)) @site
((attribute_item) @test
  (#match? @test "TEST_ONLY"))
(token_tree (identifier) @name (#match? @name "MACRO_NAMES") . "!" . (token_tree) @args) @tt
(token_tree "." . (identifier) @method
  (#any-of? @method "context" "with_context" "expect") . (token_tree) @args) @tt
(token_tree (identifier) @err (#eq? @err "Err") . (token_tree) @args) @tt
(token_tree (identifier) @path (#match? @path "(Error|ErrorCode|Status)$")
  . "::" . (identifier) @ctor . (token_tree) @args) @tt
(const_item name: (identifier) @const value: [(string_literal) (raw_string_literal)] @value)
(static_item name: (identifier) @const value: [(string_literal) (raw_string_literal)] @value)
""".replace("MACRO_NAMES", _MACRO_NAMES).replace("TEST_ONLY", _TEST_ONLY)


_GRAMMAR = tree_sitter_rust.language


def sites(path: str, text: str) -> list[Site]:
    """Every error site of one Rust file, in source order."""
    source = text.encode("utf-8")
    tree = _ts.parse(_GRAMMAR, source)
    return _Reader(path, text).read(tree.root_node)


class _Reader:
    """The sites of one file: the query's matches read one by one."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self._expect_panics: bool | None = None
        self.constants: dict[str, str] = {}
        self.tests: list[tuple[int, int]] = []
        self.found: dict[tuple[int, str], Site] = {}

    def expect_panics(self) -> bool:
        """Whether ``.expect`` is ``Option``'s and ``Result``'s here (searched once, and only
        in a file that calls it)."""
        if self._expect_panics is None:
            self._expect_panics = not _OWN_EXPECT.search(self.text)
        return self._expect_panics

    def read(self, root: Node) -> list[Site]:
        matches = _ts.matches(_ts.query(_GRAMMAR, _QUERY_SOURCE), root, max_start_depth=MAX_DEPTH)
        candidates = []
        for _pattern, captures in matches:
            if "test" in captures:
                self._exclude(captures["test"][0])
            elif "const" in captures:
                value = _literal(captures["value"][0])
                if value is not None:
                    self.constants[_text(captures["const"][0])] = value
            else:
                candidates.append(captures)
        for captures in candidates:
            anchor = (captures.get("site") or captures["tt"])[0]
            if any(start <= anchor.start_byte < end for start, end in self.tests):
                continue
            site = self._site(captures)
            if site is not None and len(_literal_text(site.template)) >= MIN_LITERAL:
                self.found.setdefault((site.line, site.template), site)
        return sorted(self.found.values(), key=lambda s: (s.line, s.template))

    def _exclude(self, attribute: Node) -> None:
        item = attribute.next_named_sibling
        while item is not None and item.type in ("attribute_item", "line_comment", "block_comment"):
            item = item.next_named_sibling
        if item is not None:
            self.tests.append((attribute.start_byte, item.end_byte))

    # -- one candidate ----------------------------------------------------------------

    def _site(self, captures: dict[str, list[Node]]) -> Site | None:
        args = captures["args"][0]
        if "name" in captures:
            return self._macro(_text(captures["name"][0]), args, captures)
        if "method" in captures:
            return self._method(_text(captures["method"][0]), args, captures)
        if "attr" in captures:
            return self._attribute(captures["site"][0], args)
        if "err" in captures:
            message = self._call_message(args)
            if message is None:
                return None
            anchor = captures["err"][0]
            return self._make(anchor, message, ErrorType.ERROR_RETURN, call="Err", returned=True)
        anchor = (captures.get("site") or captures["path"])[0]
        return self._constructor(anchor, captures["path"][0], _text(captures["ctor"][0]), args)

    def _macro(self, name: str, args: Node, captures: dict[str, list[Node]]) -> Site | None:
        anchor = (captures.get("site") or captures["name"])[0]
        arguments = _token_arguments(args)
        if name in _LOGS:
            kind, severity = ErrorType.LOG, _LOGS[name]
        elif name in _PANICS:
            kind, severity = ErrorType.PANIC, Severity.FATAL
        elif name in _ANYHOW:
            kind, severity = ErrorType.ERROR_RETURN, Severity.ERROR
            if name == "ensure":
                arguments = arguments[1:]  # the condition comes first
        else:
            project = _project_macro(name)
            if project is None:
                return None
            kind, severity = project
        message = self._first_literal(arguments)
        if message is None:
            return None
        returned = kind == ErrorType.ERROR_RETURN
        return self._make(
            anchor, message, kind, severity=severity, call=f"{name}!", returned=returned
        )

    def _method(self, name: str, args: Node, captures: dict[str, list[Node]]) -> Site | None:
        anchor = captures["method"][0]
        expect = name == "expect"
        if expect and not self.expect_panics():
            return None
        if args.type == "token_tree":
            arguments = _token_arguments(args)
            message = (
                self._token_message(arguments[0], escape=expect) if len(arguments) == 1 else None
            )
        else:
            nodes = _arguments(args)
            if len(nodes) != 1:
                return None
            argument: Node | None = nodes[0]
            if name == "with_context":
                argument = _closure_body(nodes[0])
            message = None if argument is None else self._message(argument, escape=expect)
        if message is None:
            return None
        if expect:
            return self._make(
                anchor, message, ErrorType.PANIC, severity=Severity.FATAL, call=".expect"
            )
        return self._make(anchor, message, ErrorType.ERROR_RETURN, call=f".{name}", returned=True)

    def _attribute(self, site: Node, args: Node) -> Site | None:
        message = self._first_literal(_token_arguments(args)[:1])
        if message is None:
            return None
        owner = site.next_named_sibling
        while owner is not None and owner.type in (
            "attribute_item",
            "line_comment",
            "block_comment",
        ):
            owner = owner.next_named_sibling
        error_class = None
        if owner is not None and owner.type == "enum_variant":
            variant = _text(owner.child_by_field_name("name"))
            enum = owner.parent.parent if owner.parent is not None else None
            if enum is not None and enum.type == "enum_item":
                error_class = f"{_text(enum.child_by_field_name('name'))}::{variant}"
            else:
                error_class = variant
        elif owner is not None and owner.type in ("struct_item", "enum_item"):
            error_class = _text(owner.child_by_field_name("name"))
        return self._make(
            site, message, ErrorType.ERROR_RETURN, call="#[error]", error_class=error_class
        )

    def _constructor(self, anchor: Node, path_node: Node, name: str, args: Node) -> Site | None:
        path = _text(path_node)
        last = path.rsplit("::", 1)[-1]
        status = last == "Status"
        if not status and not _ERROR_PATH.search(last):
            return None
        if path.endswith("de::Error") and name != "custom":
            return None  # serde's invalid_value(…, &"a number") names what was expected
        message = self._call_message(args)
        if message is None:
            return None
        if status:
            code = _camel(name) if name != "new" else _status_code(args)
            return self._make(
                anchor,
                message,
                ErrorType.ERROR_CODE,
                call=f"Status::{name}",
                error_class="tonic::Status",
                error_code=code,
            )
        # The type and its variant, or the type alone, without the module path (as the
        # dataset writes them): ``crate::error::ErrorCode::BindError`` is
        # ``ErrorCode::BindError``, ``std::io::Error::new`` is ``io::Error``.
        qualified = f"{path}::{name}" if name[:1].isupper() else path
        error_class = "::".join(qualified.split("::")[-2:])
        return self._make(
            anchor, message, ErrorType.ERROR_RETURN, call=f"{path}::{name}", error_class=error_class
        )

    # -- messages ---------------------------------------------------------------------

    def _first_literal(self, arguments: list[list[Node]]) -> str | None:
        """The first argument that is a lone string literal, a format string: tracing's
        structured fields (``error = %e``, ``target: "x"``) come before it."""
        for argument in arguments:
            if len(argument) == 1:
                value = _literal(argument[0])
                if value is not None:
                    return value
        return None

    def _call_message(self, args: Node) -> str | None:
        """The message among a call's arguments (``io::Error::new(kind, "…")``), parsed
        or, inside another macro, as tokens."""
        if args.type == "token_tree":
            candidates = (self._token_message(tokens) for tokens in _token_arguments(args))
        else:
            candidates = (self._message(node) for node in _arguments(args))
        return next((message for message in candidates if message is not None), None)

    def _token_message(self, tokens: list[Node], *, escape: bool = False) -> str | None:
        """The message of one argument written as tokens: a literal, ``"…".into()``,
        ``format!(…)``, ``String::from("…")``, a constant."""
        if tokens and tokens[0].type == "&":
            tokens = tokens[1:]
        if not tokens:
            return None
        first = tokens[0]
        if len(tokens) == 1:
            value = (
                _literal(first) if first.type != "identifier" else self.constants.get(_text(first))
            )
            return None if value is None else _plain(value, escape)
        kinds = [t.type for t in tokens]
        if kinds == ["identifier", "!", "token_tree"] and _text(first) == "format":
            return self._first_literal(_token_arguments(tokens[2])[:1])
        if kinds[1:] == [".", "identifier", "token_tree"] and _text(tokens[2]) in _OWNING:
            return self._token_message(tokens[:1], escape=escape)
        if kinds == ["identifier", "::", "identifier", "token_tree"] and _text(tokens[2]) == "from":
            inner = _token_arguments(tokens[3])
            if len(inner) != 1 or len(inner[0]) != 1:
                return None  # only a literal: a deeper nesting is no message, and no recursion
            return self._token_message(inner[0], escape=escape)
        return None

    def _message(self, node: Node, *, escape: bool = False) -> str | None:
        """The message an expression holds: a literal, a ``format!``, a constant, an
        owning call on either. ``escape``: a literal is no format string (``.expect``),
        so its braces are written doubled. A loop, not recursion: a hostile file may
        wrap a literal in thousands of calls."""
        while True:
            inner: Node | None
            if node.type in ("reference_expression", "parenthesized_expression"):
                inner = node.child_by_field_name("value") or node.named_child(0)
            elif node.type == "call_expression":
                inner = _owned(node)
            else:
                break
            if inner is None:
                return None
            node = inner
        if node.type in ("string_literal", "raw_string_literal"):
            value = _literal(node)
            return None if value is None else _plain(value, escape)
        if node.type == "identifier":
            value = self.constants.get(_text(node))
            return None if value is None else _plain(value, escape)
        if node.type == "macro_invocation":
            macro = node.child_by_field_name("macro")
            if macro is not None and _text(macro).rsplit("::", 1)[-1] == "format":
                tree = next((c for c in node.named_children if c.type == "token_tree"), None)
                if tree is not None:
                    return self._first_literal(_token_arguments(tree)[:1])
        return None

    # -- the site ---------------------------------------------------------------------

    def _make(
        self,
        anchor: Node,
        template: str,
        kind: ErrorType,
        *,
        severity: Severity = Severity.ERROR,
        call: str,
        returned: bool = False,
        error_class: str | None = None,
        error_code: str | None = None,
    ) -> Site:
        function, returns = _enclosing(anchor)
        if error_class is None and returned:
            error_class = _error_of(returns)
            if call == "Err" and not (error_class or "").endswith("Error"):
                error_class = None  # Err("…") of a Result<_, String> names no error type
        return Site(
            path=self.path,
            line=anchor.start_point.row + 1,
            end_line=_end(anchor).end_point.row + 1,
            template=template,
            notation=Notation.RUST,
            error_type=kind,
            severity=severity,
            error_class=error_class,
            error_code=error_code,
            function=function,
            call=call,
        )


def _owned(call: Node) -> Node | None:
    """What ``"…".into()`` or ``String::from("…")`` makes an owned string of, or ``None``
    for any other call."""
    function = call.child_by_field_name("function")
    arguments = _arguments(call.child_by_field_name("arguments"))
    if function is None:
        return None
    if function.type == "field_expression":
        field = _text(function.child_by_field_name("field"))
        return function.child_by_field_name("value") if field in _OWNING and not arguments else None
    if _text(function) in _FROM and len(arguments) == 1:
        return arguments[0]
    return None


def _project_macro(name: str) -> tuple[ErrorType, Severity] | None:
    """What a project's own error macro does, read from its name: ``bail_not_implemented!``
    and ``invalid_option_error!`` make an error, ``consistency_panic!`` panics,
    ``log_error!`` and ``debug_panic_or_warn!`` log (a macro's definition may live in
    another file, so its name is all there is to go on)."""
    words = name.split("_")
    if len(words) < 2 or name == "compile_error":
        return None
    if words[0] == "bail":
        return ErrorType.ERROR_RETURN, Severity.ERROR
    if "warn" in words:
        return ErrorType.LOG, Severity.WARNING
    if "panic" in words:
        return ErrorType.PANIC, Severity.FATAL
    if words[-1] == "error":
        if words[0] in _LOGGING_PREFIXES:
            return ErrorType.LOG, Severity.ERROR
        return ErrorType.ERROR_RETURN, Severity.ERROR
    return None


def _end(anchor: Node) -> Node:
    """The node whose end is the site's end (a method name's call, a macro's name's tree)."""
    parent = anchor.parent
    if anchor.type in ("identifier", "field_identifier") and parent is not None:
        if parent.type == "field_expression" and parent.parent is not None:
            return parent.parent
        if parent.type == "token_tree":
            following = anchor.next_named_sibling
            return following if following is not None else anchor
    return anchor


def _enclosing(node: Node) -> tuple[str, Node | None]:
    """The qualified name of the function around ``node`` (``Type::method``,
    ``outer::inner``) and that function's return type."""
    names: list[str] = []
    returns: Node | None = None
    first = True
    current = node.parent
    while current is not None:
        if current.type == "function_item":
            names.append(_text(current.child_by_field_name("name")))
            if first:
                returns = current.child_by_field_name("return_type")
                first = False
        elif current.type == "impl_item":
            kind = current.child_by_field_name("type")
            if kind is not None:
                names.append(_text(kind.child_by_field_name("type") or kind))
        elif current.type in ("trait_item", "mod_item"):
            names.append(_text(current.child_by_field_name("name")))
        current = current.parent
    return "::".join(reversed(names)), returns


def _error_of(returns: Node | None) -> str | None:
    """``Result<T, E>`` -> ``E`` (a named type); ``XResult<T>`` (an alias, whatever its
    module) -> ``XError``; ``anyhow::Result<T>`` -> ``anyhow::Error``; anything else ->
    ``None`` (a bare ``Result<T>`` alias says nothing of which error it holds)."""
    if returns is None:
        return None
    types: list[Node] = []
    name = _text(returns)
    if returns.type == "generic_type":
        name = _text(returns.child_by_field_name("type"))
        arguments = returns.child_by_field_name("type_arguments")
        if arguments is not None:
            types = [c for c in arguments.named_children if c.type not in _NOT_TYPES]
    elif returns.type not in _NAMED_TYPES:
        return None
    last = name.rsplit("::", 1)[-1]
    if last == "Result":
        if len(types) >= 2:
            error = types[1]
            named = error.type in _NAMED_TYPES and not _text(error).startswith("Self::")
            return _text(error) if named else None  # Self::Error is a trait's, unnamed here
        return "anyhow::Error" if name == "anyhow::Result" else None
    if last.endswith("Result"):
        return last[: -len("Result")] + "Error"
    return None


def _closure_body(node: Node) -> Node | None:
    if node.type != "closure_expression":
        return None
    body = node.child_by_field_name("body")
    while body is not None and body.type == "block":
        expressions = [
            c for c in body.named_children if c.type not in ("line_comment", "block_comment")
        ]
        if len(expressions) != 1:
            return None
        body = expressions[0]
        if body.type == "expression_statement":
            body = body.named_child(0)
    return body


def _arguments(node: Node | None) -> list[Node]:
    if node is None:
        return []
    return [
        c
        for c in node.named_children
        if c.type not in ("line_comment", "block_comment", "attribute_item")
    ]


def _token_arguments(tree: Node) -> list[list[Node]]:
    """A token tree's tokens, split at its top-level commas (the brackets dropped)."""
    arguments: list[list[Node]] = [[]]
    children = tree.children
    for child in children[1:-1] if len(children) >= 2 else children:
        if child.type == ",":
            arguments.append([])
        elif child.type not in ("line_comment", "block_comment"):
            arguments[-1].append(child)
    return [a for a in arguments if a]


def _status_code(args: Node) -> str | None:
    """``Status::new(Code::NotFound, …)`` -> ``NotFound``."""
    if args.type == "token_tree":
        arguments = _token_arguments(args)
        first = arguments[0] if arguments else []
        return _text(first[-1]) if len(first) >= 3 and first[-2].type == "::" else None
    nodes = _arguments(args)
    if nodes and nodes[0].type == "scoped_identifier":
        return _text(nodes[0].child_by_field_name("name"))
    return None


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _text(node: Node | None) -> str:
    return _ts.text(node, errors="replace")


def _literal(node: Node) -> str | None:
    """The value of a string literal token (escapes decoded), or ``None`` for any other."""
    if node.type == "raw_string_literal":
        content = next((c for c in node.children if c.type == "string_content"), None)
        return _text(content) if content is not None else ""
    if node.type != "string_literal":
        return None
    raw = _text(node)
    start = raw.find('"')
    if start < 0 or raw[:start] not in ("", "c"):
        return None  # a byte string is data, not a message
    return _ESCAPE.sub(_unescape, raw[start + 1 : -1])


def _unescape(match: re.Match[str]) -> str:
    code, byte, simple = match.group(1), match.group(2), match.group(3)
    if code is not None:
        try:
            return chr(int(code, 16))
        except (ValueError, OverflowError):
            return ""
    if byte is not None:
        return chr(int(byte, 16))
    if simple is not None:
        return _SIMPLE_ESCAPES.get(simple, simple)
    return ""  # a line continuation: the newline and the next line's indent


def _plain(value: str, escape: bool) -> str:
    """A literal's value as a template; with ``escape`` it is no format string, so its
    braces are literal text, written doubled in Rust's notation."""
    return value.replace("{", "{{").replace("}", "}}") if escape else value


def _literal_text(template: str) -> str:
    return _PLACEHOLDER.sub(_braces, template)


def _braces(match: re.Match[str]) -> str:
    token = match.group(0)
    return token[0] if token in ("{{", "}}") else ""
