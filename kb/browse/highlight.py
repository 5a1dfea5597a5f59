"""Syntax highlighting for record pages: the source snippet and the code examples.

Record text is untrusted, so two rules hold here. The lexer is chosen from the file's
extension only (never guessed from content: guessing runs every lexer's regexes over
hostile text), and Pygments emits CSS classes only, because the page's CSP forbids inline
styles. Pygments escapes every character it emits (``<``, ``>``, ``&``, quotes), which is
why its output, and only its output, is marked safe below.

The snippet is rendered line by line rather than with Pygments' own line numbering: each
line carries its real number (from ``sourceCodeStart``) and the error line is a ``<mark>``
with a visually hidden label, so the marked line is visible, copyable without numbers,
and announced by screen readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import GoLexer, JavaLexer, PythonLexer, RustLexer, TextLexer

# Past this size a snippet is shown escaped but uncoloured: it is too long to read anyway.
MAX_HIGHLIGHT_CHARS = 200_000

_LEXERS: dict[str, type[Lexer]] = {
    ".rs": RustLexer,
    ".java": JavaLexer,
    ".go": GoLexer,
    ".py": PythonLexer,
}
LANGUAGE_NAMES = {".rs": "Rust", ".java": "Java", ".go": "Go", ".py": "Python"}


def language_for(file_path: str) -> str:
    """The extension that picks the lexer (``".rs"``), or ``""`` for plain text."""
    suffix = PurePosixPath(file_path or "").suffix.lower()
    return suffix if suffix in _LEXERS else ""


@lru_cache(maxsize=8)
def _lexer(suffix: str) -> Lexer:
    # stripnl=False keeps leading/trailing blank lines so line numbers stay true.
    return _LEXERS.get(suffix, TextLexer)(stripnl=False, ensurenl=False)


def lexer_for(file_path: str) -> Lexer:
    return _lexer(language_for(file_path))


# Lexers and the formatter keep no state between calls; building a formatter computes its
# whole stylesheet, so one is shared.
_FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=512)
def _html_lines(code: str, file_path: str) -> tuple[str, ...]:
    """One balanced HTML fragment per source line (Pygments closes spans at newlines).

    Cached: record pages are read far more often than records change, and the key is
    the code itself, so an edited record is simply a new entry.
    """
    if len(code) > MAX_HIGHLIGHT_CHARS:
        return tuple(escape(line) for line in code.split("\n"))
    out = highlight(code, lexer_for(file_path), _FORMATTER)
    lines = out.split("\n")
    if not code.endswith("\n") and lines and lines[-1] == "":
        lines.pop()  # Pygments may end the output with a newline the code did not have
    return tuple(lines)


def highlight_code(code: str | None, file_path: str) -> SafeString:
    """A highlighted code example (``<pre><code>``), or an empty string."""
    if not code:
        return SafeString("")
    body = "\n".join(_html_lines(code.rstrip("\n"), file_path))
    lang = language_for(file_path).lstrip(".") or "text"
    return mark_safe(  # noqa: S308 - Pygments output: every character is escaped
        f'<pre class="code highlight"><code class="language-{lang}">{body}</code></pre>'
    )


@dataclass(frozen=True, slots=True)
class Snippet:
    html: SafeString
    first_line: int
    last_line: int
    error_line: int | None  # None when lineNumber falls outside the snippet


def highlight_snippet(
    code: str | None,
    file_path: str,
    *,
    start: int,
    error_line: int | None,
    explained: tuple[int, ...] = (),
) -> Snippet | None:
    """The source snippet with real line numbers and the error line marked; the lines an
    explanation came from (``explained``) carry the ``explained`` class."""
    if not code:
        return None
    start = max(int(start or 1), 1)
    lines = _html_lines(code, file_path)
    last = start + len(lines) - 1
    marked = error_line if error_line is not None and start <= error_line <= last else None
    rows = []
    for number, html in enumerate(lines, start=start):
        if number == marked:
            rows.append(
                f'<mark class="line error-line" id="L{number}">'
                f'<span class="ln" aria-hidden="true">{number}</span>'
                f'<span class="visually-hidden">Line {number}, where the error is raised: '
                f"</span>{html}</mark>"
            )
        else:
            kind = "line explained" if number in explained else "line"
            rows.append(
                f'<span class="{kind}" id="L{number}">'
                f'<span class="ln" aria-hidden="true">{number}</span>{html}</span>'
            )
    lang = language_for(file_path).lstrip(".") or "text"
    html = mark_safe(  # noqa: S308 - Pygments output plus our own fixed markup
        f'<pre class="code highlight snippet"><code class="language-{lang}">'
        + "\n".join(rows)
        + "</code></pre>"
    )
    return Snippet(html=html, first_line=start, last_line=last, error_line=marked)
