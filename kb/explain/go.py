"""Go: ``if err != nil`` (with the call that set ``err``), other ``if``/``else``
conditions, ``switch``/``select`` cases, and the ``errors.New``/``fmt.Errorf`` (or
logger) call whose format arguments the message interpolates.
"""

from __future__ import annotations

import tree_sitter_go
from tree_sitter import Node

from kb.explain import core
from kb.explain.core import Found, Grammar, ancestors, text
from kb.explain.types import Condition, clip

STRINGS = frozenset({"interpreted_string_literal", "raw_string_literal"})
SWITCHES = frozenset({"expression_switch_statement", "type_switch_statement", "select_statement"})


def _setter(if_node: Node, name: str) -> Node | None:
    """The call whose error the ``if`` checks: its initializer, or the statement before."""
    candidates = [if_node.child_by_field_name("initializer"), if_node.prev_named_sibling]
    for statement in candidates:
        if statement is None or statement.type not in (
            "short_var_declaration",
            "assignment_statement",
        ):
            continue
        left = text(statement.child_by_field_name("left"))
        if name in [part.strip() for part in left.split(",")]:
            return statement.child_by_field_name("right")
    return None


def _err_check(cond: Node) -> str | None:
    """``err`` in ``err != nil`` (either side), else ``None``."""
    if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) != "!=":
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if right is not None and right.type == "nil" and left is not None and left.type == "identifier":
        return text(left)
    if left is not None and left.type == "nil" and right is not None and right.type == "identifier":
        return text(right)
    return None


def condition(node: Node, child: Node) -> Found | None:
    kind = node.type
    if kind == "if_statement":
        branch = core.block_field(node, child)
        cond = node.child_by_field_name("condition")
        if cond is None or branch not in ("consequence", "alternative"):
            return None
        err = _err_check(cond) if branch == "consequence" else None
        setter = _setter(node, err) if err else None
        if setter is not None:
            return Found(
                Condition("err", clip(text(setter)), via=clip(text(cond), 40)), (setter, cond)
            )
        which = "if" if branch == "consequence" else "else"
        return Found(Condition(which, clip(text(cond))), (cond,))
    if kind in ("expression_case", "type_case", "communication_case", "default_case"):
        switch = node.parent
        value = switch.child_by_field_name("value") if switch is not None else None
        label = node.child_by_field_name("value") or node.child_by_field_name("communication")
        if kind == "type_case":
            label = node.child_by_field_name("type")
        pattern = "default" if kind == "default_case" else clip(text(label), 60)
        nodes = tuple(n for n in (value, label) if n is not None) or (node,)
        return Found(Condition("arm", clip(text(value)), pattern), nodes)
    return None


def values(literal: Node) -> tuple[str, ...]:
    top = core.concat_top(literal, "binary_expression")
    found = core.concat_values(top, "binary_expression", STRINGS)
    return core.capped(found + core.format_args(literal, top, frozenset({"argument_list"})))


def raised_by(literal: Node) -> str:
    for node in ancestors(literal):
        if node.type == "call_expression":
            return clip(text(node.child_by_field_name("function")), 40)
        if node.type not in ("argument_list", "binary_expression", "parenthesized_expression"):
            break
    return ""


def owner(function: Node) -> str | None:
    receiver = function.child_by_field_name("receiver")
    if receiver is None:
        return None
    param = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None)
    kind = param.child_by_field_name("type") if param is not None else None
    if kind is not None and kind.type == "pointer_type" and kind.named_child_count:
        kind = kind.named_children[0]
    if kind is not None and kind.type == "generic_type":
        kind = kind.child_by_field_name("type")
    return text(kind) or None


def declared(literal: Node) -> str | None:
    """The sentinel error a package-level ``var ErrX = errors.New("…")`` declares."""
    spec = next((n for n in ancestors(literal) if n.type in ("var_spec", "const_spec")), None)
    if spec is None or any(n.type in GRAMMAR.functions for n in ancestors(spec)):
        return None
    return text(spec.child_by_field_name("name")) or None


READERS = (condition, owner, values, raised_by)  # in the Grammar's field order
GRAMMAR = Grammar(
    tree_sitter_go.language,
    frozenset({"function_declaration", "method_declaration"}),
    STRINGS,
    *READERS,
    declared=lambda literal: declared(literal),
)
