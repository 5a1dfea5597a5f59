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

from tests.source_imports import PATH_LOADER, imports

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


# Tests and benchmarks one way: the benchmarks may use the project and the tests' helpers
# (factories, shared cases such as ``tests/engine/similar_cases.py``), never a test module,
# whose collection-time side effects and fixtures are the suite's; and no test imports a
# benchmark, so a benchmark's data or timing code can change without touching the suite
# (``tests/test_docs.py`` runs ``benchmarks/report_md.py`` as a program instead).
TESTS = REPO / "tests"
BENCHMARKS = REPO / "benchmarks"


def _package(path: Path) -> str:
    return ".".join(path.relative_to(REPO).parent.parts)


def _benchmark_modules() -> set[str]:
    """Names a benchmark module is imported by: ``benchmarks`` and, because the scripts put
    their own folder on ``sys.path``, the bare name of each file in it."""
    return {"benchmarks", *(p.stem for p in BENCHMARKS.rglob("*.py"))}


def _a_test_module(name: str) -> bool:
    return any(part.startswith("test_") or part == "conftest" for part in name.split("."))


def _test_side_offences(source: str, package: str, benchmark_modules: set[str]) -> list[str]:
    return [
        f"{line}: {name}"
        for line, name in imports(source, package)
        if name == PATH_LOADER or name.split(".")[0] in benchmark_modules
    ]


def _benchmark_side_offences(source: str, package: str) -> list[str]:
    return [
        f"{line}: {name}"
        for line, name in imports(source, package)
        if _a_test_module(name) or name == PATH_LOADER
    ]


def test_no_test_imports_a_benchmark_and_no_benchmark_a_test_module() -> None:
    benchmark_modules = _benchmark_modules()
    offences = []
    for path in sorted(TESTS.rglob("*.py")):
        offences += [
            f"{path.relative_to(REPO)}:{offence}"
            for offence in _test_side_offences(
                path.read_text(encoding="utf-8"), _package(path), benchmark_modules
            )
        ]
    helpers = [p for p in TESTS.rglob("*.py") if not _a_test_module(p.stem)]
    for path in sorted([*BENCHMARKS.rglob("*.py"), *helpers]):
        # the helpers too: a benchmark that imports one would import its test modules
        offences += [
            f"{path.relative_to(REPO)}:{offence}"
            for offence in _benchmark_side_offences(
                path.read_text(encoding="utf-8"), _package(path)
            )
        ]
    assert len(benchmark_modules) > 10  # the scan found the benchmarks
    assert offences == []


def test_the_import_rule_catches_what_it_is_for() -> None:
    names = {"benchmarks", "report_md", "bench_similar"}
    assert _test_side_offences("from benchmarks import report_md", "tests", names)
    assert _test_side_offences("from report_format import fmt", "tests", names | {"report_format"})
    assert _test_side_offences("import benchmarks.bench_similar", "tests.engine", names)
    assert _test_side_offences(
        "import importlib.util\nimportlib.util.spec_from_file_location('b', 'x.py')", "tests", names
    )
    assert not _test_side_offences("from tests.engine import similar_cases", "tests", names)
    assert _benchmark_side_offences("from tests.engine.test_redos import SIZE", "benchmarks")
    assert _benchmark_side_offences("from tests.engine import test_redos", "benchmarks")
    assert _benchmark_side_offences("from .test_redos import SIZE", "tests.engine")
    assert _benchmark_side_offences(
        "import importlib\nimportlib.import_module('tests.conftest')", ""
    )
    assert not _benchmark_side_offences("from tests.engine.redos_inputs import SIZE", "benchmarks")
    assert not _benchmark_side_offences("from tests.servers import Gunicorn", "benchmarks")
