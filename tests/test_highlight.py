"""The highlighter: lexer by extension only, real line numbers, escaped output, no styles."""

from __future__ import annotations

import html as html_lib
import re
import time

from kb.highlight import highlight_code, highlight_snippet, language_for, lexer_for
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
        str(highlight_snippet(hostile, "x.java", start=1, error_line=1).html),  # type: ignore[union-attr]
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


def test_large_pathological_snippet_is_fast() -> None:
    code = ('"' + "\\" * 50_000 + "a" * 50_000 + "\n") + "/*" * 1000
    started = time.perf_counter()
    snippet = highlight_snippet(code, "x.rs", start=1, error_line=1)
    assert snippet is not None
    assert time.perf_counter() - started < 1.0
