"""Error sites in Go source files (tree-sitter); see `kb.extract`.

One parse and one query per file: the query (run in C) finds the calls whose name can
raise, return or log an error, and Python reads the message out of each. The constructs
are those the dataset's extractor took (its README, "How the records were made"):
``errors.New``, ``fmt.Errorf``, ``errors.Wrap(f)``, gRPC ``status.Error(f)``,
``http.Error``, ``panic(…)``, and the ``Fatal*``/``Panic*``/``DPanic*``/``Error*``/``Warn*``
calls of loggers (std log, zap and its sugared ``…w``/``…f``/``…ln`` forms,
klog/glog/plog/grpclog, klog's ``ErrorS(err, "…")``, ``lg.With(…).Warn(…)`` chains) when
the message is literal text. A sentinel (``ErrFoo = errors.New("…")``) names its class.
Test files (``*_test.go``) are left out before this module sees them (`kb.extract.files`).
"""

from __future__ import annotations

import re
from http import HTTPStatus

import tree_sitter_go
from tree_sitter import Node

from kb.extract import _ts
from kb.extract.sites import MIN_LITERAL, ErrorType, Notation, Severity, Site

__all__ = ["sites"]

#: Sites are matched no deeper than this in the syntax tree. Real code nests far less; a
#: hostile file nested thousands deep would otherwise make the query's work grow with the
#: square of its depth.
MAX_DEPTH = 200

#: Package-level constructors: (message argument, printf-style?).
_CONSTRUCTORS = {
    ("errors", "New"): (0, False),
    ("errors", "Errorf"): (0, True),
    ("errors", "Wrap"): (1, False),
    ("errors", "Wrapf"): (1, True),
    ("errors", "WithMessage"): (1, False),
    ("errors", "WithMessagef"): (1, True),
    ("fmt", "Errorf"): (0, True),
    ("status", "Error"): (1, False),
    ("status", "Errorf"): (1, True),
    ("status", "New"): (1, False),
    ("status", "Newf"): (1, True),
    ("http", "Error"): (1, False),
}
#: Packages whose functions are no loggers even where a name reads like one.
_NOT_LOGGERS = frozenset({"errors", "fmt", "status", "http", "strings", "bytes", "os"})
_LOG_METHOD = re.compile(r"^(D?Panic|Fatal|Error|Warn(?:ing)?|Print)(S|f|w|ln)?$")
#: The standard logger's ``Print*`` has no level: it logs an error when its words say so.
_ERROR_WORDS = re.compile(
    r"\b(?:fail(?:s|ed|ure)?|errors?|cannot|can't|unable|invalid|unexpected|warn(?:ing)?)\b",
    re.IGNORECASE,
)
_VERB = re.compile(r"%%|%[-+# 0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[a-zA-Z]|\{\}")
_ESCAPE = re.compile(r"\\(?:([0-7]{3})|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))")
_SIMPLE_ESCAPES = _ts.C_ESCAPES
_STRINGS = ("interpreted_string_literal", "raw_string_literal")

#: The names of the calls worth reading (``Newf`` is ``New`` in its ``f`` form).
_CALL_NAMES = (
    r"^(New|Errorf|Wrapf?|WithMessagef?|Error|D?Panic|Fatal|Warn|Warning|Print)(S|f|w|ln)?$"
)
_QUERY_SOURCE = r"""
(call_expression
  function: (selector_expression operand: (_) @recv field: (field_identifier) @method
    (#match? @method "CALL_NAMES"))
  arguments: (argument_list) @args) @site
(call_expression
  function: (identifier) @panic (#eq? @panic "panic")
  arguments: (argument_list) @args) @site
(const_spec name: (identifier) @const value: (expression_list . (_) @value))
""".replace("CALL_NAMES", _CALL_NAMES)


_GRAMMAR = tree_sitter_go.language


def sites(path: str, text: str) -> list[Site]:
    """Every error site of one Go file, in source order."""
    tree = _ts.parse(_GRAMMAR, text.encode("utf-8"))
    return _Reader(path).read(tree.root_node)


class _Reader:
    """The sites of one file: the query's matches read one by one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.constants: dict[str, str] = {}
        self.found: dict[tuple[int, str], Site] = {}

    def read(self, root: Node) -> list[Site]:
        candidates = []
        for _pattern, captures in _ts.matches(
            _ts.query(_GRAMMAR, _QUERY_SOURCE), root, max_start_depth=MAX_DEPTH
        ):
            if "const" in captures:
                value = self._message(captures["value"][0])
                if value is not None and "{}" not in value:
                    self.constants[_text(captures["const"][0])] = value
            else:
                candidates.append(captures)
        for captures in candidates:
            site = self._site(captures)
            if site is not None and len(_VERB.sub(_verb_text, site.template)) >= MIN_LITERAL:
                self.found.setdefault((site.line, site.template), site)
        return sorted(self.found.values(), key=lambda s: (s.line, s.template))

    def _site(self, captures: dict[str, list[Node]]) -> Site | None:
        call = captures["site"][0]
        arguments = _arguments(captures["args"][0])
        if "panic" in captures:
            return self._panic(call, arguments)
        if _inside_panic(call):
            return None  # panic(fmt.Errorf(…)): the panic is the site
        receiver = captures["recv"][0]
        method = _text(captures["method"][0])
        package = _text(receiver) if receiver.type == "identifier" else ""
        if package.endswith("errors"):
            package = "errors"  # an import alias: pkgerrors "github.com/pkg/errors"
        constructor = _CONSTRUCTORS.get((package, method))
        if constructor is not None:
            return self._constructor(call, package, method, arguments, *constructor)
        if package in _NOT_LOGGERS:
            return None
        return self._log(call, _text(receiver), method, arguments)

    def _constructor(
        self,
        call: Node,
        package: str,
        method: str,
        arguments: list[Node],
        index: int,
        printf: bool,
    ) -> Site | None:
        if len(arguments) <= index:
            return None
        message, printf = self._argument(arguments[index], printf)
        if message is None:
            return None
        kind, error_code, http_status = ErrorType.ERROR_RETURN, None, None
        if package == "status":
            kind, error_code = ErrorType.ERROR_CODE, _selected(arguments[0])
        elif package == "http" and len(arguments) > 2:
            http_status = _http_status(arguments[2])
        return self._make(
            call,
            message,
            kind,
            printf=printf,
            call_name=f"{package}.{method}",
            error_class=_sentinel(call) or ("status.Error" if error_code else None),
            error_code=error_code,
            http_status=http_status,
        )

    def _panic(self, call: Node, arguments: list[Node]) -> Site | None:
        if len(arguments) != 1:
            return None
        argument = arguments[0]
        printf = False
        if argument.type == "call_expression":
            function = _text(argument.child_by_field_name("function"))
            inner = _arguments(argument.child_by_field_name("arguments"))
            if function in ("fmt.Sprintf", "fmt.Errorf", "errors.Errorf"):
                printf = True
            elif function not in ("errors.New", "fmt.Sprint", "fmt.Sprintln"):
                return None
            if not inner:
                return None
            argument = inner[0]
        message = self._message(argument)
        if message is None:
            return None
        return self._make(
            call,
            message,
            ErrorType.PANIC,
            severity=Severity.FATAL,
            printf=printf,
            call_name="panic",
        )

    def _log(self, call: Node, receiver: str, method: str, arguments: list[Node]) -> Site | None:
        found = _LOG_METHOD.match(method)
        if found is None:
            return None
        level, form = found.group(1), found.group(2) or ""
        index = 1 if form == "S" else 0
        if len(arguments) <= index:
            return None
        message, printf = self._argument(arguments[index], form == "f")
        if message is None:
            return None
        if level == "Print" and (receiver != "log" or not _ERROR_WORDS.search(message)):
            return None
        if level.endswith("Panic"):
            kind, severity = ErrorType.PANIC, Severity.FATAL
        elif level == "Fatal":
            kind, severity = ErrorType.LOG, Severity.FATAL
        elif level.startswith("Warn") or (level == "Print" and "warn" in message.lower()):
            kind, severity = ErrorType.LOG, Severity.WARNING
        else:
            kind, severity = ErrorType.LOG, Severity.ERROR
        short = receiver if len(receiver) <= 40 else "…"
        return self._make(
            call, message, kind, severity=severity, printf=printf, call_name=f"{short}.{method}"
        )

    def _argument(self, node: Node, printf: bool) -> tuple[str | None, bool]:
        """The message of a message argument and whether it is a printf format: a
        ``fmt.Sprintf(…)`` argument brings its own format."""
        if node.type == "call_expression":
            function = _text(node.child_by_field_name("function"))
            inner = _arguments(node.child_by_field_name("arguments"))
            if function == "fmt.Sprintf" and inner:
                return self._message(inner[0]), True
        return self._message(node), printf

    def _message(self, node: Node) -> str | None:
        """The text an expression holds: a literal, a constant, a ``+`` concatenation
        whose non-literal parts are written ``{}``; ``None`` when no part is literal."""
        parts = self._parts(node)
        if not any(literal for literal, _text in parts):
            return None
        return "".join(value if literal else "{}" for literal, value in parts)

    def _parts(self, node: Node) -> list[tuple[bool, str]]:
        """The literal and non-literal parts of a ``+`` concatenation, left to right (a
        loop over a stack: a hostile file may concatenate thousands of terms)."""
        parts: list[tuple[bool, str]] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "parenthesized_expression" and current.named_child_count == 1:
                inner = current.named_child(0)
                if inner is not None:
                    stack.append(inner)
                    continue
            if current.type in _STRINGS:
                parts.append((True, _literal(current)))
                continue
            if current.type == "identifier" and _text(current) in self.constants:
                parts.append((True, self.constants[_text(current)]))
                continue
            if current.type == "binary_expression":
                operator = current.child_by_field_name("operator")
                left = current.child_by_field_name("left")
                right = current.child_by_field_name("right")
                if operator is not None and operator.type == "+" and left and right:
                    stack += [right, left]
                    continue
            parts.append((False, ""))
        return parts

    def _make(
        self,
        call: Node,
        template: str,
        kind: ErrorType,
        *,
        severity: Severity = Severity.ERROR,
        printf: bool,
        call_name: str,
        error_class: str | None = None,
        error_code: str | None = None,
        http_status: int | None = None,
    ) -> Site:
        return Site(
            path=self.path,
            line=call.start_point.row + 1,
            end_line=call.end_point.row + 1,
            template=template,
            notation=Notation.PRINTF if printf else Notation.PLAIN,
            error_type=kind,
            severity=severity,
            error_class=error_class,
            error_code=error_code,
            http_status=http_status,
            function=_enclosing(call),
            call=call_name,
        )


def _inside_panic(call: Node) -> bool:
    arguments = call.parent
    if arguments is None or arguments.type != "argument_list":
        return False
    outer = arguments.parent
    if outer is None or outer.type != "call_expression":
        return False
    return _text(outer.child_by_field_name("function")) == "panic"


def _sentinel(call: Node) -> str | None:
    """``ErrFoo`` of ``var ErrFoo = errors.New(…)`` (or ``ErrFoo = …`` in a ``var`` block)."""
    values = call.parent
    if values is None or values.type != "expression_list":
        return None
    spec = values.parent
    if spec is None or spec.type not in ("var_spec", "const_spec"):
        return None
    position = next(i for i, value in enumerate(values.named_children) if value == call)
    names = list(spec.children_by_field_name("name"))
    if position < len(names):
        name = _text(names[position])
        if name.startswith(("Err", "err")):
            return name
    return None


def _enclosing(node: Node) -> str:
    """``Type.method`` or ``function`` around ``node`` (function literals have no name)."""
    current = node.parent
    while current is not None:
        if current.type == "function_declaration":
            return _text(current.child_by_field_name("name"))
        if current.type == "method_declaration":
            name = _text(current.child_by_field_name("name"))
            receiver = current.child_by_field_name("receiver")
            kinds = [
                _text(p.child_by_field_name("type")).lstrip("*").split("[")[0]
                for p in (receiver.named_children if receiver is not None else [])
                if p.type == "parameter_declaration"
            ]
            return f"{kinds[0]}.{name}" if kinds and kinds[0] else name
        current = current.parent
    return ""


def _selected(node: Node) -> str | None:
    """``FailedPrecondition`` of ``codes.FailedPrecondition``."""
    if node.type == "selector_expression":
        return _text(node.child_by_field_name("field"))
    return None


def _http_status(node: Node) -> int | None:
    """``http.StatusNotFound`` -> 404, ``404`` -> 404."""
    if node.type == "int_literal":
        value = int(_text(node)) if _text(node).isdigit() else 0
        return value if 100 <= value <= 599 else None
    name = _selected(node)
    if name is None or not name.startswith("Status"):
        return None
    words = re.findall(r"[A-Z][a-z]*|\d+", name[len("Status") :])
    try:
        return int(HTTPStatus["_".join(words).upper()])
    except KeyError:
        return None


def _arguments(node: Node | None) -> list[Node]:
    if node is None:
        return []
    return [c for c in node.named_children if c.type != "comment"]


def _text(node: Node | None) -> str:
    return _ts.text(node, errors="replace")


def _literal(node: Node) -> str:
    """A string literal's value (escapes of an interpreted one decoded)."""
    raw = _text(node)
    if node.type == "raw_string_literal":
        return raw[1:-1].replace("\r", "")
    return _ESCAPE.sub(_unescape, raw[1:-1])


def _unescape(match: re.Match[str]) -> str:
    octal, byte, short, long, simple = match.groups()
    if octal is not None:
        return chr(int(octal, 8))
    for digits in (byte, short, long):
        if digits is not None:
            try:
                return chr(int(digits, 16))
            except (ValueError, OverflowError):
                return ""
    return _SIMPLE_ESCAPES.get(simple, "\\" + simple)


def _verb_text(match: re.Match[str]) -> str:
    return "%" if match.group(0) == "%%" else ""
