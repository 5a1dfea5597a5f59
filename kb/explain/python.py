"""Python: ``if``/``elif``/``else``, ``except``, ``assert``, ``match`` cases, and the
message's f-string fields, ``%`` operands, ``.format(...)`` arguments or logger arguments.

Messages are often wrapped for translation (``_("...") % {...}`` in Django); the wrapper
call is looked through to find what the text is formatted with.
"""

from __future__ import annotations

import tree_sitter_python
from tree_sitter import Node

from kb.explain import core
from kb.explain.core import Found, Grammar, ancestors, text
from kb.explain.types import Condition, clip

STRINGS = frozenset({"string", "concatenated_string"})
TRANSLATORS = frozenset({"_", "gettext", "gettext_lazy", "ngettext", "pgettext", "_lazy"})


def condition(node: Node, child: Node) -> Found | None:
    kind = node.type
    if kind in ("if_statement", "elif_clause", "conditional_expression"):
        cond = node.child_by_field_name("condition")
        if kind == "conditional_expression":
            parts = node.named_children
            if len(parts) != 3 or child == parts[1]:
                return None
            cond = parts[1]
            branch: str | None = "consequence" if child == parts[0] else "alternative"
        else:
            branch = core.block_field(node, child)
            if branch == "alternative" and child.type == "elif_clause":
                return None  # the elif reports its own condition
        if cond is None or branch not in ("consequence", "alternative"):
            return None
        return Found(
            Condition("if" if branch == "consequence" else "else", clip(text(cond))), (cond,)
        )
    if kind == "except_clause":
        caught = next((c for c in node.named_children if c.type != "block"), None)
        if caught is not None and caught != child:
            if caught.type == "as_pattern" and caught.named_child_count:
                caught = caught.named_children[0]
            return Found(Condition("catch", clip(text(caught), 60)), (caught,))
        return None
    if kind == "assert_statement":
        first = node.named_children[0] if node.named_child_count else None
        if first is not None and first != child:
            return Found(Condition("assert", clip(text(first)), via="assert"), (first,))
    if kind == "case_clause":
        pattern = next((c for c in node.named_children if c.type == "case_pattern"), None)
        match = node.parent.parent if node.parent is not None else None
        subject = match.child_by_field_name("subject") if match is not None else None
        if pattern is not None:
            nodes = tuple(n for n in (subject, pattern) if n is not None)
            return Found(Condition("arm", clip(text(subject)), clip(text(pattern), 60)), nodes)
    return None


def _unwrap(literal: Node) -> Node:
    """The translation call around the literal (``_("...")``), or the literal itself."""
    top = core.concat_top(literal, "binary_operator")
    args = top.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    if call is not None and call.type == "call":
        name = text(call.child_by_field_name("function")).rsplit(".", 1)[-1]
        if name in TRANSLATORS:
            return call
    return top


def _operands(node: Node) -> list[str]:
    if node.type in ("tuple", "parenthesized_expression", "list"):
        return [clip(text(c), 60) for c in node.named_children]
    if node.type == "dictionary":
        pairs = [c.child_by_field_name("value") for c in node.named_children if c.type == "pair"]
        return [clip(text(v), 60) for v in pairs if v is not None]
    return [clip(text(node), 60)]


def values(literal: Node) -> tuple[str, ...]:
    found = [
        clip(text(c.child_by_field_name("expression")), 60)
        for c in literal.named_children
        if c.type == "interpolation"
    ]
    top = _unwrap(literal)
    found.extend(
        core.concat_values(core.concat_top(literal, "binary_operator"), "binary_operator", STRINGS)
    )
    parent = top.parent
    if (
        parent is not None
        and parent.type == "binary_operator"
        and text(parent.child_by_field_name("operator")) == "%"
    ):
        right = parent.child_by_field_name("right")
        if right is not None and right != top:
            found.extend(_operands(right))
    elif (
        parent is not None
        and parent.type == "attribute"
        and text(parent.child_by_field_name("attribute")) == "format"
    ):
        call = parent.parent
        args = call.child_by_field_name("arguments") if call is not None else None
        if args is not None:
            found.extend(clip(text(c), 60) for c in args.named_children)
    else:
        found.extend(core.format_args(literal, top, frozenset({"argument_list"})))
    return core.capped(found)


def raised_by(literal: Node) -> str:
    for node in ancestors(literal):
        if node.type == "raise_statement":
            raised = node.named_children[0] if node.named_child_count else None
            if raised is not None and raised.type == "call":
                raised = raised.child_by_field_name("function")
            return f"raise {clip(text(raised), 40)}".strip()
        if node.type in ("function_definition", "expression_statement", "return_statement"):
            if node.type == "expression_statement" and node.named_child_count:
                call = node.named_children[0]
                if call.type == "call":
                    return clip(text(call.child_by_field_name("function")), 40)
            break
    return ""


def owner(function: Node) -> str | None:
    for node in ancestors(function):
        if node.type == "class_definition":
            return text(node.child_by_field_name("name")) or None
        if node.type == "function_definition":
            return None  # a nested function belongs to no class
    return None


READERS = (condition, owner, values, raised_by)  # in the Grammar's field order
GRAMMAR = Grammar(
    tree_sitter_python.language,
    frozenset({"function_definition"}),
    STRINGS,
    *READERS,
    braces=False,
)
