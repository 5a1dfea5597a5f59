"""What the code says: a short factual explanation of an error, derived from its snippet.

Pure Python (no Django), like ``kb.engine``. ``explain`` parses a record's source snippet
with a real parser (tree-sitter and the grammar of the file's language), finds the site
that raises the error, and reports the enclosing function (with its impl type, class or
receiver), the condition or call whose failure leads there, the values the message
interpolates (names as written) and the snippet lines it read them from, so the page can
mark them. One module per language family holds what differs; ``core`` holds the walk.

The snippet is untrusted text: everything returned is a plain string, to be escaped
where it is rendered.
"""

from __future__ import annotations

from kb.explain.core import MAX_SOURCE_CHARS, Grammar, explain_with
from kb.explain.types import Condition, Explanation

__all__ = ["MAX_SOURCE_CHARS", "Condition", "Explanation", "explain", "grammar_for"]

# Keys are file extensions (as ``kb.browse.highlight.language_for`` returns them) and names.
_ALIASES = {
    ".rs": "rust",
    ".java": "java",
    ".scala": "scala",
    ".sc": "scala",
    ".go": "go",
    ".py": "python",
}


def grammar_for(language: str) -> Grammar | None:
    """The grammar for ``".rs"`` or ``"rust"`` (any case), or ``None`` if unsupported."""
    name = _ALIASES.get(language.lower(), language.lower())
    # Imported on first use: a process that never explains never loads a grammar.
    if name == "rust":
        from kb.explain import rust

        return rust.GRAMMAR
    if name in ("java", "scala"):
        from kb.explain import java

        return java.GRAMMARS[name]
    if name == "go":
        from kb.explain import go

        return go.GRAMMAR
    if name == "python":
        from kb.explain import python

        return python.GRAMMAR
    return None


def explain(
    source: str, *, language: str, first_line: int, site_line: int, message: str
) -> Explanation | None:
    """Explain the error raised at ``site_line`` of ``source`` (which starts at
    ``first_line``), or ``None`` when the language is unsupported, the site lies outside
    the snippet, or nothing could be found."""
    grammar = grammar_for(language)
    if grammar is None:
        return None
    return explain_with(
        grammar, source, first_line=first_line, site_line=site_line, message=message
    )
