"""House rules the code is held to, checked on every test run.

Comments and docstrings say why a decision holds, never when or how fast it ran: figures
belong in ``benchmarks/results/`` and ``docs/performance.md``, where ``make bench`` keeps them
current. And the repository stands alone: nothing in it cites a document that is not in it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KB = REPO / "kb"

TIMING = re.compile(
    r"\b\d[\d.,]*\s?(?:ns|µs|us|ms|s|secs?|seconds?|min|minutes?|hours?)\b(?!-)"
    r"|\b\d[\d.,]*\s?(?:records?|rec|req|requests?|rows?|lines?)/s\b"
    r"|\b\d[\d.,]*\s?x (?:faster|slower)\b"
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2}:\d\d(?::\d\d)?\b")
OUTSIDE = re.compile(r"\.\./shared|RELIABILITY\b|CONTRACT\.md|STYLE\.md|MATCHING\.md")


def _prose(path: Path) -> list[tuple[int, str]]:
    """Every comment and docstring in ``path``, with its line number."""
    source = path.read_text(encoding="utf-8")
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                found.append((node.body[0].lineno, doc))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in KB.rglob("*.py") if "migrations" not in p.parts)


def _offences(rule: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line}: {hit.group(0)!r}"
        for path in _modules()
        for line, text in _prose(path)
        for hit in rule.finditer(text)
    ]


@pytest.mark.parametrize("rule", [TIMING, DATE], ids=["timings", "dates"])
def test_no_figures_or_dates_in_code_comments(rule: re.Pattern[str]) -> None:
    assert _offences(rule) == []


def test_nothing_cites_a_document_outside_the_repository() -> None:
    offences = _offences(OUTSIDE)
    for path in [
        *REPO.glob("*.md"),
        *(REPO / "docs").glob("*.md"),
        *(REPO / "tests").rglob("*.py"),
    ]:
        if path == Path(__file__):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                offences.append(f"{path.relative_to(REPO)}:{n}")
    assert offences == []


def test_the_rules_catch_what_they_are_for() -> None:
    assert TIMING.search("one took 0.28 s at 1M patterns")
    assert TIMING.search("16.7k: 3,942 records/s")
    assert TIMING.search("8.5x faster")
    assert DATE.search("the committed run (11:41)")
    assert OUTSIDE.search("see RELIABILITY #11")
    assert not TIMING.search("a 256 KiB paste, 30 records, 2 workers")
