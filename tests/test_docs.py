"""The documentation the code leans on stays true: every bar cited in the repository has
its section in docs/reliability.md, and docs/performance.md is what its renderer makes of
the committed benchmark results (so no figure on it lacks a result file behind it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import report_md

REPO = Path(__file__).resolve().parents[1]
ANCHOR = re.compile(r'<a id="(r(\d+)-[a-z0-9-]+)"></a>')
CITATION = re.compile(r"reliability\.md#(r\d+-[a-z0-9-]+)")
SOURCES = ("kb", "tests", "benchmarks", "docs", "README.md", "CONTRIBUTING.md", "Makefile")


def _anchors() -> list[str]:
    return [a for a, _ in ANCHOR.findall((REPO / "docs" / "reliability.md").read_text())]


def _repo_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = REPO / name
        files += [path] if path.is_file() else sorted(path.rglob("*"))
    return [
        f
        for f in files
        if f.is_file()
        and f.suffix in {".py", ".md", ".html", ".js", ""}
        and ".cache" not in f.parts
    ]


def test_every_bar_has_one_section_with_its_anchor_in_order() -> None:
    numbers = [int(n) for _, n in ANCHOR.findall((REPO / "docs" / "reliability.md").read_text())]
    assert numbers == list(range(1, 30))
    assert len(set(_anchors())) == 29


def test_every_cited_bar_exists() -> None:
    anchors = set(_anchors())
    cited = {
        (f.relative_to(REPO).as_posix(), anchor)
        for f in _repo_files()
        for anchor in CITATION.findall(f.read_text(errors="replace"))
    }
    assert cited, "the repository cites no bar: the pattern above no longer finds them"
    assert {(path, a) for path, a in cited if a not in anchors} == set()


def test_the_performance_page_is_rendered_from_the_committed_results() -> None:
    committed = (REPO / "docs" / "performance.md").read_text()
    assert committed == report_md.render(), (
        "docs/performance.md is stale: run .venv/bin/python benchmarks/report_md.py"
    )


def test_every_result_file_has_a_section() -> None:
    page = report_md.render()
    for path in (REPO / "benchmarks" / "results").glob("*.json"):
        assert f"`benchmarks/results/{path.name}`" in page


def test_the_page_renders_what_is_there_and_says_what_is_unreadable(tmp_path: Path) -> None:
    assert "## " not in report_md.render(tmp_path)  # no result files: the header alone

    (tmp_path / "matcher.json").write_text(json.dumps({"results": [{"label": "tiny"}]}))
    (tmp_path / "import.json").write_text("{not json")
    (tmp_path / "pages.json").write_text(json.dumps({"cases": "not a list"}))
    (tmp_path / "someday.json").write_text(json.dumps({"answer": 42}))
    page = report_md.render(tmp_path)

    assert "| tiny | — |" in page  # present key shown, missing ones a dash
    assert "could not read `import.json`" in page
    assert "## Pages (SQLite)" in page  # a changed shape still gets its section
    assert "## someday" in page
    assert "| `answer` | 42 |" in page


@pytest.mark.parametrize(
    ("value", "cell"),
    [(None, "—"), (True, "yes"), (16720, "16,720"), (0.96331, "0.963"), (2442695.0, "2,442,695")],
)
def test_cells_are_rounded_and_missing_values_are_a_dash(value: object, cell: str) -> None:
    from report_format import fmt

    assert fmt(value) == cell
