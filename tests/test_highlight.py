"""The highlighter: lexer by extension only, real line numbers, escaped output, no styles."""

from __future__ import annotations

import html as html_lib
import re
import time

import pytest

from kb.browse.highlight import (
    _html_lines,
    highlight_code,
    highlight_snippet,
    language_for,
    lexer_for,
)
from tests.factories import SEED

SEED_RECORD = SEED["record"]


def test_lexer_comes_from_the_file_extension_only() -> None:
    assert lexer_for("a/b.rs").name == "Rust"
    assert lexer_for("A.java").name == "Java"
    assert lexer_for("main.go").name == "Go"
    assert lexer_for("x.py").name == "Python"
    # content that looks like Python does not matter: unknown extension is plain text
    assert lexer_for("script").name == "Text only"
    assert lexer_for("notes.md").name == "Text only"
    assert language_for("x.PY") == ".py"


def test_seed_snippet_has_real_line_numbers_and_marks_the_error_line() -> None:
    snippet = highlight_snippet(
        SEED_RECORD["sourceCode"],
        SEED_RECORD["filePath"],
        start=SEED_RECORD["sourceCodeStart"],
        error_line=SEED_RECORD["lineNumber"],
    )
    assert snippet is not None
    assert (snippet.first_line, snippet.last_line, snippet.error_line) == (62, 98, 80)
    html = str(snippet.html)
    assert html.count('class="line"') + html.count('class="line error-line"') == 37
    assert '<span class="line" id="L62"><span class="ln" aria-hidden="true">62</span>' in html
    assert html.count("<mark") == 1
    marked = html.split('<mark class="line error-line" id="L80">')[1].split("</mark>")[0]
    assert ">80</span>" in marked
    assert "bail" in marked
    assert 'class="k' in html  # Rust keywords got token classes


def test_error_line_outside_the_snippet_marks_nothing() -> None:
    snippet = highlight_snippet("a\nb\n", "x.py", start=10, error_line=99)
    assert snippet is not None
    assert snippet.error_line is None
    assert "<mark" not in str(snippet.html)
    assert highlight_snippet("", "x.py", start=1, error_line=1) is None


def test_output_escapes_markup_and_has_no_inline_styles() -> None:
    hostile = '</code></pre><script>alert(1)</script><img src=x onerror="alert(2)">\n{{ x }}'
    for html in (
        str(highlight_code(hostile, "x.rs")),
        str(highlight_snippet(hostile, "x.java", start=1, error_line=1).html),
        str(highlight_code(hostile, "unknown.txt")),
    ):
        assert "<script" not in html
        assert "<img" not in html
        assert "&lt;" in html
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", html))
        assert "<script>alert(1)</script>" in text  # the payload reads as literal text
        assert "style=" not in html


def test_code_example_is_highlighted_with_the_records_language() -> None:
    html = str(highlight_code("def f():\n    return 1\n", "pkg/mod.py"))
    assert html.startswith('<pre class="code highlight"><code class="language-py">')
    assert '<span class="k">def</span>' in html
    assert str(highlight_code(None, "x.py")) == ""


def _pathological(kib: int) -> str:
    """A snippet that makes backtracking lexers work hard: an unterminated string of
    backslashes, then unclosed comments; ``kib`` KiB of it."""
    n = kib * 1024 // 12
    return '"' + "\\" * (5 * n) + "a" * (5 * n) + "\n" + "/*" * n


def _highlight_cpu(code: str, path: str) -> float:
    """CPU time of one uncached highlight, best of three (CPU time, not wall time: another
    process on the machine does not count)."""
    best = float("inf")
    for _ in range(3):
        _html_lines.cache_clear()
        started = time.process_time()
        snippet = highlight_snippet(code, path, start=1, error_line=1)
        best = min(best, time.process_time() - started)
        assert snippet is not None
    return best


@pytest.mark.parametrize("path", ["x.rs", "x.py", "x.java", "x.go"])
def test_pathological_snippet_costs_linear_in_its_size(path: str) -> None:
    """Ten times the snippet costs at most forty times the CPU: linear with room for noise,
    where a quadratic lexer would cost a hundred times. The absolute cost of the 100 KiB
    snippet (docs/reliability.md#r7-highlighter) is measured by
    benchmarks/highlight_costs.py, which bench_pages.py runs."""
    small, large = _pathological(10), _pathological(100)
    assert len(large) // len(small) == 10
    ratio = _highlight_cpu(large, path) / max(_highlight_cpu(small, path), 1e-6)
    assert ratio <= 40, ratio
    snippet = highlight_snippet(large + "</code><script>", path, start=1, error_line=1)
    assert snippet is not None
    assert "<script" not in snippet.html
