"""Rust: ``match`` arms, ``if``/``if let``/``let … else``, the ``?`` adapters
(``ok_or_else``, ``context``, ``map_err`` …), ``ensure!``/``assert!``, and the format
macros whose arguments the message interpolates.

Macro arguments are a token tree, not parsed expressions, so the condition of
``ensure!`` and the format arguments are read as the comma-separated groups of tokens.
"""

from __future__ import annotations

import tree_sitter_rust
from tree_sitter import Node

from kb.explain import core
from kb.explain.core import Found, Grammar, ancestors, text
from kb.explain.types import Condition, clip

# Adapters that turn a failed ``Option``/``Result`` into the error: the receiver is the
# call that failed.
ADAPTERS = frozenset(
    {
        "ok_or_else",
        "ok_or",
        "context",
        "with_context",
        "map_err",
        "expect",
        "expect_err",
        "unwrap_or_else",
        "wrap_err",
        "wrap_err_with",
        "with_whatever_context",
        "whatever_context",
    }
)
ASSERTS = frozenset(
    {"ensure", "assert", "assert_eq", "assert_ne", "debug_assert", "debug_assert_eq"}
)
# Macros that only build text: the error is raised by what surrounds them.
FORMATTERS = frozenset({"format", "format_args", "concat"})


def token_groups(tree: Node) -> list[tuple[Node, str]]:
    """The comma-separated groups of a macro's token tree: (first node, text)."""
    groups: list[list[Node]] = [[]]
    for child in tree.children[1:-1]:  # inside the delimiters
        if child.type == ",":
            groups.append([])
        else:
            groups[-1].append(child)
    out = []
    for nodes in groups:
        if nodes:
            source = tree.text or b""
            start, end = nodes[0].start_byte - tree.start_byte, nodes[-1].end_byte - tree.start_byte
            out.append((nodes[0], source[start:end].decode("utf-8", "replace")))
    return out


def _loose_arm(node: Node) -> Node | None:
    """The pattern of an arm recovery left as loose tokens (``} Pattern => {``) just
    before ``node``: a snippet that starts inside a ``match`` has no ``match`` to parse."""
    before = node.prev_sibling
    if before is None or before.type != "ERROR":
        return None
    arrows = [c for c in before.children if c.type == "=>"]
    return arrows[-1].prev_named_sibling if arrows else None


def _macro_name(node: Node) -> str:
    return text(node.child_by_field_name("macro")).rsplit("::", 1)[-1]


def condition(node: Node, child: Node) -> Found | None:
    kind = node.type
    if kind == "match_arm" and child != node.child_by_field_name("pattern"):
        pattern = node.child_by_field_name("pattern")
        match = node.parent.parent if node.parent is not None else None
        value = match.child_by_field_name("value") if match is not None else None
        nodes = tuple(n for n in (value, pattern) if n is not None)
        return Found(Condition("arm", clip(text(value)), clip(text(pattern), 60)), nodes)
    loose = _loose_arm(child)
    if loose is not None:
        return Found(Condition("arm", "", clip(text(loose), 60)), (loose,))
    if kind == "binary_expression" and child == node.child_by_field_name("right"):
        # A snippet that starts inside a ``match`` leaves its arms unparsed; recovery
        # reads ``Pattern => value`` as a binary expression with ``=>`` between.
        left = node.child_by_field_name("left")
        source = node.text or b""
        if left is not None:
            between = source[left.end_byte - node.start_byte : child.start_byte - node.start_byte]
            if between.strip() == b"=>" and left.type != "binary_expression":
                return Found(Condition("arm", "", clip(text(left), 60)), (left,))
    if kind == "if_expression":
        branch = core.block_field(node, child)
        cond = node.child_by_field_name("condition")
        if branch not in ("consequence", "alternative") or cond is None:
            return None
        if cond.type == "let_condition":
            value, pattern = cond.child_by_field_name("value"), cond.child_by_field_name("pattern")
            which = "arm" if branch == "consequence" else "let-else"
            return Found(Condition(which, clip(text(value)), clip(text(pattern), 60)), (cond,))
        return Found(
            Condition("if" if branch == "consequence" else "else", clip(text(cond))), (cond,)
        )
    if kind == "let_declaration" and core.block_field(node, child) == "alternative":
        value, pattern = node.child_by_field_name("value"), node.child_by_field_name("pattern")
        nodes = tuple(n for n in (value,) if n is not None)
        return Found(Condition("let-else", clip(text(value)), clip(text(pattern), 60)), nodes)
    if kind == "call_expression" and child == node.child_by_field_name("arguments"):
        function = node.child_by_field_name("function")
        if function is not None and function.type == "field_expression":
            method = text(function.child_by_field_name("field"))
            receiver = function.child_by_field_name("value")
            if method in ADAPTERS and receiver is not None:
                return Found(Condition("call", clip(text(receiver)), via=method), (receiver,))
    if kind == "macro_invocation" and _macro_name(node) in ASSERTS:
        tree = next((c for c in node.children if c.type == "token_tree"), None)
        groups = token_groups(tree) if tree is not None else []
        if groups and groups[0][0].type not in ("string_literal", "raw_string_literal"):
            head = groups[0][0]
            return Found(
                Condition("assert", clip(groups[0][1]), via=f"{_macro_name(node)}!"), (head,)
            )
    return None


def _inline_names(literal: Node) -> list[str]:
    """``{name}`` and ``{name:?}`` captured straight from scope by the format string."""
    names = []
    body = text(literal)
    start = body.find("{")
    while start != -1:
        end = body.find("}", start)
        if end == -1:
            break
        inner = body[start + 1 : end].split(":", 1)[0].strip()
        if inner.startswith("{"):
            start = body.find("{", start + 2)
            continue
        if (
            inner
            and (inner[0].isalpha() or inner[0] == "_")
            and inner.replace("_", "a").replace(".", "a").isalnum()
        ):
            names.append(inner)
        start = body.find("{", end)
    return names


def values(literal: Node) -> tuple[str, ...]:
    if not core.has_placeholder(text(literal)):
        return ()
    found = _inline_names(literal)
    parent = literal.parent
    if parent is not None and parent.type == "token_tree":
        groups = token_groups(parent)
        after = [t for first, t in groups if first.start_byte >= literal.end_byte]
        found.extend(clip(t, 60) for t in after)
    else:
        found.extend(core.format_args(literal, literal, frozenset({"arguments"})))
    return core.capped(found)


def raised_by(literal: Node) -> str:
    node: Node | None = literal
    for _ in range(6):
        node = node.parent if node is not None else None
        if node is None:
            break
        if node.type in ("attribute", "attribute_item"):
            return ""  # a declaration's message (``#[error(…)]``): nothing raises it here
        if node.type == "macro_invocation" and _macro_name(node) not in FORMATTERS:
            return f"{_macro_name(node)}!"
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "field_expression":
                name = "." + text(function.child_by_field_name("field"))
            else:
                name = text(function).rsplit("::", 1)[-1]
            if name not in (".to_string", ".into", ".to_owned"):
                return clip(name, 40)
    return ""


def owner(function: Node) -> str | None:
    for node in ancestors(function):
        if node.type == "impl_item":
            target = node.child_by_field_name("type")
            if target is not None and target.type == "generic_type":
                target = target.child_by_field_name("type")
            return text(target) or None
        if node.type == "trait_item":
            return text(node.child_by_field_name("name")) or None
        if node.type == "function_item":
            return None  # a nested function belongs to no type
    return None


def declared(literal: Node) -> str | None:
    """``Enum::Variant`` (or ``Struct``) whose ``#[error("…")]`` attribute holds the literal."""
    item = next((n for n in ancestors(literal) if n.type == "attribute_item"), None)
    target = item.next_named_sibling if item is not None else None
    while target is not None and target.type in ("attribute_item", "line_comment"):
        target = target.next_named_sibling
    if target is not None and target.type == "ERROR":
        # The snippet starts inside the enum: its variants parse as loose tokens, the
        # variant's name first.
        first = target.named_children[0] if target.named_child_count else None
        for _ in range(3):  # ``Variant { … }`` parses as a struct expression: its name
            if first is None or first.type in ("identifier", "type_identifier"):
                break
            first = first.named_children[0] if first.named_child_count else None
        return text(first) if first is not None else None
    if target is None or target.type not in ("enum_variant", "struct_item", "enum_item"):
        return None
    name = text(target.child_by_field_name("name"))
    if target.type != "enum_variant":
        return name or None
    enum = next((n for n in ancestors(target) if n.type == "enum_item"), None)
    owner = text(enum.child_by_field_name("name")) if enum is not None else ""
    return f"{owner}::{name}" if owner else name or None


READERS = (condition, owner, values, raised_by)  # in the Grammar's field order
GRAMMAR = Grammar(
    tree_sitter_rust.language,
    frozenset({"function_item"}),
    frozenset({"string_literal", "raw_string_literal"}),
    *READERS,
    sep="::",
    declared=declared,
)
