"""Java and Scala: ``if``/``else``, ``switch``/``case`` arms, ``catch``, the guard helpers
(``checkArgument``, ``requireNonNull``, ``orElseThrow``) and the message's format
arguments or ``+`` concatenation.

Scala shares Java's shape (classes, methods, ``if``, ``catch``, ``case``); only the node
kinds differ, so one module serves both.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter_java
import tree_sitter_scala
from tree_sitter import Node

from kb.explain import core
from kb.explain.core import Found, Grammar, ancestors, text
from kb.explain.types import Condition, clip

GUARDS = frozenset({"checkArgument", "checkState", "checkNotNull", "requireNonNull", "isTrue"})
RESCUES = frozenset({"orElseThrow", "orElseGet", "exceptionally", "getOrElse", "getOrElseThrow"})
OWNERS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "class_definition",
        "object_definition",
        "trait_definition",
    }
)
STRINGS = frozenset({"string_literal", "string", "interpolated_string_expression", "text_block"})
# Recovery can read ``catch (…) {`` or ``synchronized (…) {`` as a method declaration.
KEYWORDS = frozenset({"catch", "if", "for", "while", "switch", "synchronized", "try"})
ARGUMENT_LISTS = frozenset({"argument_list", "arguments"})
CALLS = frozenset({"method_invocation", "object_creation_expression", "call_expression"})


def _branch(node: Node, child: Node) -> Found | None:
    branch = core.block_field(node, child)
    cond = node.child_by_field_name("condition")
    if cond is None or branch not in ("consequence", "alternative"):
        return None
    if cond.type == "parenthesized_expression" and cond.named_child_count == 1:
        cond = cond.named_children[0]
    return Found(Condition("if" if branch == "consequence" else "else", clip(text(cond))), (cond,))


def _switch_value(case: Node) -> Node | None:
    for node in ancestors(case):
        if node.type in ("switch_expression", "switch_statement", "match_expression"):
            return node.child_by_field_name("condition") or node.child_by_field_name("value")
    return None


def _unparen(node: Node | None) -> Node | None:
    if node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        return node.named_children[0]
    return node


def condition(node: Node, child: Node) -> Found | None:
    kind = node.type
    if kind in ("if_statement", "if_expression", "ternary_expression"):
        return _branch(node, child)
    if kind in ("switch_block_statement_group", "switch_rule", "case_clause"):
        label = next((c for c in node.named_children if c.type == "switch_label"), None)
        label = label or node.child_by_field_name("pattern")
        if label is None or child == label:
            return None
        value = _unparen(_switch_value(node))
        pattern = text(label).removeprefix("case").strip().rstrip(":").rstrip("->").strip()
        nodes = tuple(n for n in (value, label) if n is not None)
        return Found(Condition("arm", clip(text(value)), clip(pattern or text(label), 60)), nodes)
    if kind in ("block", "constructor_body", "constructor_declaration", "method_declaration"):
        caught = _loose_catch(node)
        if caught is not None:
            return Found(Condition("catch", clip(text(caught), 60)), (caught,))
    if kind == "catch_clause":
        param = next(
            (c for c in node.named_children if c.type in ("catch_formal_parameter",)), None
        )
        if param is not None:
            caught = next((c for c in param.named_children if c.type == "catch_type"), param)
            return Found(Condition("catch", clip(text(caught), 60)), (param,))
        return None
    if kind == "method_invocation" and child == node.child_by_field_name("arguments"):
        name = text(node.child_by_field_name("name"))
        args = node.child_by_field_name("arguments")
        if name in GUARDS and args is not None and args.named_child_count:
            first = args.named_children[0]
            if first.type not in STRINGS:
                return Found(Condition("assert", clip(text(first)), via=name), (first,))
        receiver = node.child_by_field_name("object")
        if name in RESCUES and receiver is not None:
            return Found(Condition("call", clip(text(receiver)), via=name), (receiver,))
    if kind == "assert_statement":
        asserted = node.named_children[0] if node.named_child_count else None
        if asserted is not None and asserted != child:
            return Found(Condition("assert", clip(text(asserted)), via="assert"), (asserted,))
    return None


def _caught_type(params: Node | None) -> Node | None:
    """The type in ``(IOException e)``: the first named node inside the parentheses."""
    inner = params.named_children[0] if params is not None and params.named_child_count else None
    if inner is not None and inner.type in ("formal_parameter", "catch_formal_parameter"):
        return inner.child_by_field_name("type") or inner.named_children[0]
    return inner


def _loose_catch(node: Node) -> Node | None:
    """A ``catch`` whose ``try`` the snippet cut off, as recovery parses it: a call
    ``catch (T e)`` before the block, or, inside the wrapper class, a constructor
    named ``catch``. Returns the caught type."""
    if node.type in ("constructor_declaration", "method_declaration"):
        if text(node.child_by_field_name("name")) == "catch":
            return _caught_type(node.child_by_field_name("parameters"))
        return None
    before = node.prev_named_sibling if node.type == "block" else None
    call = before.named_children[0] if before is not None and before.named_child_count else None
    is_catch = call is not None and call.type == "method_invocation"
    if call is not None and is_catch and text(call.child_by_field_name("name")) == "catch":
        return _caught_type(call.child_by_field_name("arguments"))
    return None


def function_name(function: Node) -> str | None:
    name = text(function.child_by_field_name("name"))
    return None if not name or name in KEYWORDS else name


def values(literal: Node) -> tuple[str, ...]:
    if literal.type == "interpolated_string_expression":
        return core.capped(
            [clip(text(c), 60) for c in literal.named_children if c.type == "interpolation"]
        )
    top = core.concat_top(literal, "binary_expression")
    found = core.concat_values(top, "binary_expression", STRINGS)
    return core.capped(found + core.format_args(literal, top, ARGUMENT_LISTS))


def raised_by(literal: Node) -> str:
    for node in ancestors(literal):
        if node.type == "throw_statement" or node.type == "throw_expression":
            created = next((c for c in node.named_children), None)
            kind = created.child_by_field_name("type") if created is not None else None
            return f"throw new {text(kind)}" if kind is not None else "throw"
        if node.type in ("method_declaration", "constructor_declaration", "function_definition"):
            break
        if node.type == "method_invocation":
            name = text(node.child_by_field_name("name"))
            obj = text(node.child_by_field_name("object"))
            if name not in ("format", "formatted", "valueOf", "toString"):
                return clip(f"{obj}.{name}" if obj else name, 40)
        if node.type in ("expression_statement", "local_variable_declaration", "return_statement"):
            break
    return ""


def owner(function: Node) -> str | None:
    for node in ancestors(function):
        if node.type in OWNERS:
            name = text(node.child_by_field_name("name"))
            return name if name and name != WRAPPER else None
        if node.type in ("object_creation_expression", "lambda_expression"):
            return None  # an anonymous class: the method belongs to no named type
    return None


def declared(literal: Node) -> str | None:
    """``Enum.CONSTANT`` whose arguments hold the literal (Kafka's ``Errors`` table)."""
    constant = next((n for n in ancestors(literal) if n.type == "enum_constant"), None)
    if constant is None:
        # The snippet starts inside the enum: in the wrapper class a constant parses as
        # a call with no receiver, ``NAME(code, "message", ...)``.
        call = next((n for n in ancestors(literal) if n.type in CALLS), None)
        name = text(call.child_by_field_name("name")) if call is not None else ""
        loose = call is not None and call.child_by_field_name("object") is None
        return name if loose and name.isupper() else None
    name = text(constant.child_by_field_name("name"))
    enum = next((n for n in ancestors(constant) if n.type == "enum_declaration"), None)
    owner = text(enum.child_by_field_name("name")) if enum is not None else ""
    return f"{owner}.{name}" if owner and owner != WRAPPER else name or None


# The class the snippet is wrapped in (``Grammar.prefix``): it names no real type.
WRAPPER = "KbSnippetWrapper"


READERS = (condition, owner, values, raised_by)  # in the Grammar's field order


def _grammar(language: Callable[[], object], functions: frozenset[str], prefix: str) -> Grammar:
    return Grammar(
        language,
        functions,
        STRINGS,
        *READERS,
        prefix=prefix,
        declared=declared,
        function_name=function_name,
    )


GRAMMARS = {
    "java": _grammar(
        tree_sitter_java.language,
        frozenset(
            {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
        ),
        f"class {WRAPPER} {{ ",
    ),
    "scala": _grammar(tree_sitter_scala.language, frozenset({"function_definition"}), ""),
}
