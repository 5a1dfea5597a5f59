"""The house's layout holds (docs/architecture.md): every module imports, no two modules
import each other round a cycle, and the import contracts in pyproject.toml are kept.

The cycle check reads the source, not the running process: an import inside a function
counts as much as one at the top of a module, because hiding an import in a function is
how a cycle goes unnoticed until the day the call order changes. Imports under ``if
TYPE_CHECKING:`` are left out: they never run, and annotations may name each other's
types (``from __future__ import annotations``).
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KB = REPO / "kb"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    """Every module of kb/ but the migrations (they are frozen history, checked by the
    migrations contract)."""
    return {
        _module_name(path): path
        for path in sorted(KB.rglob("*.py"))
        if "migrations" not in path.relative_to(KB).parts
    }


def _type_checking_only(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, at any depth, but what runs only for mypy."""
    for child in ast.iter_child_nodes(node):
        if _type_checking_only(child):
            assert isinstance(child, ast.If)
            for branch in child.orelse:
                yield from _walk(branch)
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _walk(child)


def _imported(name: str, path: Path, modules: set[str]) -> Iterator[tuple[str, int]]:
    """(module of kb, line) for each import in ``path``: the named module, and the
    packages Python runs on the way to it (those that do not contain the importer)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:  # `from kb.matching import formats`: a module
                sub = f"{source}.{alias.name}"
                targets.append(sub if sub in modules else source)
        for target in targets:
            parts = target.split(".")
            for depth in range(2, len(parts) + 1):
                step = ".".join(parts[:depth])
                inside = name == step or name.startswith(step + ".")
                if step in modules and (step == target or not inside):
                    yield step, node.lineno


def _graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    sources = _sources()
    modules = set(sources)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    where: dict[tuple[str, str], str] = {}
    for name, path in sources.items():
        for target, line in _imported(name, path, modules):
            if target != name:
                graph[name].add(target)
                where.setdefault((name, target), f"{path.relative_to(REPO)}:{line}")
    return graph, where


def test_every_module_imports() -> None:
    """Each module imports on its own (a cycle at import time fails here by its name)."""
    failed: dict[str, str] = {}
    before = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    for name in sorted(_sources()):
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
        finally:
            # kb.gunicorn_conf gives gunicorn's workers a metrics directory; the tests'
            # process keeps its single-process metrics.
            made = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
            if made != before:
                if before is None:
                    os.environ.pop("PROMETHEUS_MULTIPROC_DIR")
                else:
                    os.environ["PROMETHEUS_MULTIPROC_DIR"] = before
                if made:
                    shutil.rmtree(made, ignore_errors=True)
    assert failed == {}


def test_no_module_imports_itself_round_a_cycle() -> None:
    graph, where = _graph()
    assert graph["kb.matching.views"], "the graph found no import: the walk is broken"
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        cycle: list[str] = exc.args[1]  # [a, b, ..., a]: each imports the one before it
        steps = [
            f"{importer} -> {imported} ({where[importer, imported]})"
            for imported, importer in itertools.pairwise(cycle)
        ]
        pytest.fail("import cycle:\n  " + "\n  ".join(steps))


def test_the_graph_sees_what_runs(tmp_path: Path) -> None:
    """The walk finds an import in a function body and the package on the way, and skips
    what only mypy reads."""
    modules = {"kb.a", "kb.a.b", "kb.c", "kb.c.d", "kb.e"}
    path = tmp_path / "x.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from kb.c import d\n"
        "if TYPE_CHECKING:\n"
        "    from kb.e import Thing\n"
        "def f():\n"
        "    from kb.a.b import g\n",
        encoding="utf-8",
    )
    found = {target for target, _ in _imported("kb.x", path, modules)}
    assert found == {"kb.c", "kb.c.d", "kb.a", "kb.a.b"}


def test_the_import_contracts_are_kept() -> None:
    """pyproject.toml's [tool.importlinter] contracts: the layers, the pure cores, the
    views and the frozen migrations."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
