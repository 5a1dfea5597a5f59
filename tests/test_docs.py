"""The documentation the code leans on stays true: every bar cited in the repository has
its section in docs/reliability.md, and docs/performance.md is what its renderer makes of
the committed benchmark results (so no figure on it lacks a result file behind it).

The renderer is run as the program it is (``benchmarks/report_md.py``), never imported: tests
do not import benchmark modules (``tests/test_house_rules.py``)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "benchmarks" / "report_md.py"
ANCHOR = re.compile(r'<a id="(r(\d+)-[a-z0-9-]+)"></a>')
TABLE_ROW = re.compile(r"^\| \[(\d+)\]\(#(r\d+-[a-z0-9-]+)\) \|", re.MULTILINE)
CITATION = re.compile(r"reliability\.md#(r\d+-[a-z0-9-]+)")
SOURCES = ("kb", "tests", "benchmarks", "docs", "README.md", "CONTRIBUTING.md", "Makefile")


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPORT), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def _render(results: Path | None = None) -> str:
    """The page the renderer makes of ``results`` (the committed result files by default)."""
    done = _report("--stdout", *([f"--results={results}"] if results else []))
    assert done.returncode == 0, done.stderr
    return done.stdout


@functools.cache
def _committed_page() -> str:
    return _render()


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
    """Sections in number order, each once, each with its row in the table at the top
    (numbers are handed out in ranges, so one branch may skip some)."""
    text = (REPO / "docs" / "reliability.md").read_text()
    found = [(int(n), anchor) for anchor, n in ANCHOR.findall(text)]
    numbers = [n for n, _ in found]
    assert numbers[:29] == list(range(1, 30))
    assert numbers == sorted(set(numbers))
    assert len(set(_anchors())) == len(numbers)
    rows = [(int(n), a) for n, a in TABLE_ROW.findall(text)]
    assert rows == found


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
    done = _report("--check")
    assert done.returncode == 0, done.stdout + done.stderr  # the stale lines, as a diff


def test_every_result_file_has_a_section() -> None:
    page = _committed_page()
    for path in (REPO / "benchmarks" / "results").glob("*.json"):
        if not path.name.endswith(".pyperf.json"):  # a timing's raw values, not a result
            assert f"`benchmarks/results/{path.name}`" in page


def test_a_timings_raw_values_are_not_a_result_file(tmp_path: Path) -> None:
    (tmp_path / "normalise.json").write_text(json.dumps({"rows": []}))
    (tmp_path / "normalise.pyperf.json").write_text(json.dumps({"benchmarks": []}))
    page = _render(tmp_path)
    assert "`benchmarks/results/normalise.json`" in page
    assert "## normalise.pyperf" not in page


def test_the_page_renders_what_is_there_and_says_what_is_unreadable(tmp_path: Path) -> None:
    assert "## " not in _render(tmp_path)  # no result files: the header alone

    (tmp_path / "matcher.json").write_text(json.dumps({"results": [{"label": "tiny"}]}))
    (tmp_path / "import.json").write_text("{not json")
    (tmp_path / "pages.json").write_text(json.dumps({"cases": "not a list"}))
    (tmp_path / "someday.json").write_text(json.dumps({"answer": 42}))
    page = _render(tmp_path)

    assert "| tiny | — |" in page  # present key shown, missing ones a dash
    assert "could not read `import.json`" in page
    assert "## Pages (SQLite)" in page  # a changed shape still gets its section
    assert "## someday" in page
    assert "| `answer` | 42 |" in page


def test_cells_are_rounded_and_missing_values_are_a_dash(tmp_path: Path) -> None:
    values = {"none": None, "flag": True, "count": 16720, "share": 0.96331, "big": 2442695.0}
    page = _render_one(tmp_path, "cells.json", values)
    for name, cell in [
        ("none", "—"),
        ("flag", "yes"),
        ("count", "16,720"),
        ("share", "0.963"),
        ("big", "2,442,695"),
    ]:
        assert f"| `{name}` | {cell} |" in page


def test_the_page_opens_with_an_index_linking_every_section() -> None:
    page = _committed_page()
    titles = re.findall(r"^## (.+)$", page, flags=re.MULTILINE)
    index = page[: page.index("\n## ")]
    assert titles
    for title in titles:
        anchor = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        assert f"- [{title}](#{anchor})" in index


def test_no_committed_result_file_falls_to_the_generic_renderer() -> None:
    assert "from a benchmark not described here" not in _committed_page()


def _render_one(tmp_path: Path, name: str, data: object) -> str:
    (tmp_path / name).write_text(json.dumps(data))
    return _render(tmp_path)


def test_import_layers_show_each_share_the_rule_and_the_decision(tmp_path: Path) -> None:
    layer = {
        "what": "forked parser (`ahead.py`): parsing in the writing process",
        "rounds": 2,
        "full_wall_s": [4.0, 6.0],
        "without_wall_s": [5.0, 6.0],
        "full_cpu_s": [3.0, 3.0],
        "without_cpu_s": [2.0, 2.0],
        "share_wall_median": 0.1,
        "share_cpu_median": -0.5,
        "verdict": "removed",
    }
    writers = {**layer, "what": "custom writers (`rows.py`)", "verdict": "kept"}
    page = _render_one(
        tmp_path,
        "import-layers.json",
        {
            "share": "1 - with / without; rule: keep a layer only if it saves at least 0.25",
            "layers_16_7k": {"no-ahead": layer, "plain-writers": writers},
            "runs_200k": {"after": [{"wall_s": 50.0, "cpu_s": 40.0, "load1": 2.0}]},
        },
    )
    assert "saves at least 25% of the import's time" in page
    # medians of the rounds, the median share with the range of the per-round shares
    assert "| 2 | 5 / 5.5 | 3 / 2 | +10% (+0% to +20%) | -50% | removed |" in page
    assert "| after | 1 | 50 | 40 | 4,000 |" in page  # 200k records in 50 s
    assert "Decision: kept custom writers (`rows.py`). Removed: forked parser (`ahead.py`)." in page


def test_page_layers_show_the_bar_and_whether_each_layer_pays(tmp_path: Path) -> None:
    page = _render_one(
        tmp_path,
        "pages-layers.json",
        {
            "layers": {
                "links": {
                    "in_the_code": False,
                    "pages": [{"page": "tag index", "saved_share_cpu": 0.097}],
                    "best_saved_share_cpu": 0.097,
                    "keep_share": 0.2,
                    "pays_its_way": False,
                }
            }
        },
    )
    assert "saves at least 20% of a page's server time" in page
    assert "| +10% | 20% | no | no |" in page
    assert "| `links` | tag index |" in page


def test_gaps_show_each_method_the_chosen_one_and_the_drafts(tmp_path: Path) -> None:
    best = {"precision": 0.94, "recall": 0.833, "f1": 0.883, "gaps": 98}
    page = _render_one(
        tmp_path,
        "gaps.json",
        {
            "rule": "best F1 with precision >= 0.9",
            "methods": {
                "exact": {"best_threshold": 1.0, "best": {**best, "f1": 0.5}},
                "fuzzy:guarded": {"best_threshold": 0.7, "best": best, "sweep": {"0.7": best}},
            },
            "chosen": {"method": "fuzzy:guarded", "threshold": 0.7},
            "derive": {
                "gaps_with_2_or_more_samples": 21,
                "draft_pattern_matches_all": 20,
                "draft_admitted_by_matcher": 19,
                "admission_compile_s_median": 0.085,
            },
        },
    )
    assert "| `fuzzy:guarded` (chosen) | 0.7 | 0.94 | 0.833 | 0.883 | 98 |" in page
    assert "| `exact` | 1 | 0.94 | 0.833 | 0.5 | 98 |" in page
    assert "Decision: `fuzzy:guarded` at 0.7" in page
    assert "matches every sample in 20 and the matcher admits 19" in page
    assert "85 ms at the median" in page


def test_an_unknown_nested_file_reads_as_tables_and_says_what_it_measures(
    tmp_path: Path,
) -> None:
    page = _render_one(
        tmp_path,
        "unknown-nested.json",
        {
            "benchmark": "unknown nested",
            "what": "Report and vote through the loop services at growing scales.",
            "scales": {"1000": {"ms": 1.25, "queries": {"report": 4}}},
        },
    )
    assert "## unknown nested" in page
    assert "Report and vote through the loop services at growing scales." in page
    assert "| name | ms | queries.report |" in page
    assert "| 1000 | 1.25 | 4 |" in page


def test_a_column_no_row_fills_is_left_out_only_where_asked(tmp_path: Path) -> None:
    page = _render_one(tmp_path, "matcher.json", {"results": [{"label": "tiny", "load_s": 0.5}]})
    assert "| tiny | — |" in page  # the main table keeps every column
    assert "| pattern set | load s |\n" in page  # the build table drops the empty ones
    assert "peak RSS MB" not in page


def test_learn_shows_the_hand_judged_precision_of_its_sample_and_misses_by_cause(
    tmp_path: Path,
) -> None:
    sample = [{"site": f"src/a.rs:{n}", "template": f"failed to open {n}"} for n in (1, 2, 3, 4)]
    repo = {
        "name": "o/r",
        "status": "ok",
        "all": {"extra": 9},
        "extra_sample": sample,
        "miss_sample": [
            {"file": "src/m.rs", "template": "metric_cnt", "missing": 2},
            {"file": "src/m.rs", "template": "other_cnt", "missing": 1},
            {"file": "src/n.rs", "template": "never looked", "missing": 1},
        ],
    }

    def verdict(line: int, ok: bool) -> str:
        row = {"repo": "o/r", "path": "src/a.rs", "line": line}
        return json.dumps({**row, "template": f"failed to open {line}", "verdict": ok})

    (tmp_path / "learn-precision.jsonl").write_text(
        "\n".join(
            [
                verdict(1, True),
                verdict(2, True),
                verdict(3, False),
                # a judgement of a site no longer in the sample does not count
                json.dumps(
                    {
                        "repo": "o/r",
                        "path": "src/z.rs",
                        "line": 1,
                        "template": "x",
                        "verdict": False,
                    }
                ),
                "{torn",
            ]
        )
    )
    cause = "a metric name, not a message"
    (tmp_path / "learn-misses.jsonl").write_text(
        "\n".join(
            json.dumps({"repo": "o/r", "path": "src/m.rs", "template": t, "cause": cause})
            for t in ("metric_cnt", "other_cnt")
        )
    )
    page = _render_one(tmp_path, "learn.json", {"repos": [repo]})
    assert "| o/r | 9 | 4 | 3 | 2 | 66.7% |" in page  # 4 sampled, 3 judged, 2 kept
    assert f"| o/r | {cause} | 3 |" in page
    assert "| o/r | not looked at | 1 |" in page
    assert page.index(cause) < page.index("not looked at")  # most frequent first


def test_a_part_that_changed_shape_loses_its_figures_not_the_section(tmp_path: Path) -> None:
    layer = {"what": "forked parser", "rounds": 1, "verdict": "removed"}
    page = _render_one(
        tmp_path,
        "import-layers.json",
        {"machine": "2 cores", "commits": ["abc"], "layers_16_7k": {"no-ahead": layer}},
    )
    assert "could not render" not in page
    assert "| forked parser | 1 |" in page


# --- Links, and the configuration table ------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = (REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md")))
# How the code reads the environment: kb.settings' helpers, os.environ and os.getenv.
ENV_READ = re.compile(
    r"""(?:\benv_(?:str|bool|int|list)|os\.environ\.(?:get|setdefault)|os\.getenv)"""
    r"""\(\s*["']([A-Z][A-Z0-9_]*)["']|os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]"""
)
# A make variable a caller may set from the environment: `NAME ?= default`.
MAKE_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)\s*\?=", flags=re.MULTILINE)


def _heading_anchors(page: Path) -> set[str]:
    text = page.read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    titles = re.findall(r"^#{1,6} (.+)$", prose, flags=re.MULTILINE)
    found = {re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-") for t in titles}
    return found | set(re.findall(r'<a id="([^"]+)"', text))


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_reaches_a_file_and_its_section(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, section = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        missing = not dest.exists()
        if missing or (section and dest.suffix == ".md" and section not in _heading_anchors(dest)):
            broken.append(target)
    assert broken == []


def test_the_readme_links_every_doc() -> None:
    readme = (REPO / "README.md").read_text()
    for doc in [*sorted((REPO / "docs").glob("*.md")), REPO / "CONTRIBUTING.md"]:
        assert f"]({doc.relative_to(REPO).as_posix()})" in readme


def _configuration_table() -> set[str]:
    """The variables named in the first cell of docs/configuration.md's table rows."""
    rows = re.findall(r"^\| (`[^|]+`) \|", (REPO / "docs" / "configuration.md").read_text(), re.M)
    return {name for cell in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", cell)}


def _variables_read() -> dict[str, str]:
    """Every environment variable the code under kb/ and the Makefile read, with where."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "kb").rglob("*.py")):
        for match in ENV_READ.finditer(path.read_text()):
            found.setdefault(match[1] or match[2], path.relative_to(REPO).as_posix())
    for name in MAKE_VARIABLE.findall((REPO / "Makefile").read_text()):
        found.setdefault(name, "Makefile")
    return found


def test_every_environment_variable_the_code_reads_is_in_the_configuration_table() -> None:
    read = _variables_read()
    # the scan still sees each way of reading one (a helper renamed must not pass vacuously)
    assert {"DATABASE_URL", "KB_MAX_PASTE_BYTES", "GUNICORN_LOG_LEVEL", "HOST"} <= set(read)
    assert "PROMETHEUS_MULTIPROC_DIR" in read  # os.environ[...] and setdefault
    assert "PYTEST_ARGS" in read  # the Makefile's ?= variables
    table = _configuration_table()
    assert {name: where for name, where in read.items() if name not in table} == {}
