"""Markdown cells and tables for the performance page (``benchmarks/report_md.py``).

Result files change shape as their benchmarks evolve, so every lookup tolerates a missing
key and every cell renders ``None`` as a dash rather than failing the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

MISSING = "—"


def get(data: Any, *path: str | int, default: Any = None) -> Any:
    """``data[path[0]][path[1]]…``, or ``default`` as soon as a step is missing."""
    for step in path:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return default
    return data


def fmt(value: Any) -> str:
    """A cell: thousands separated, floats rounded, lists joined, missing as a dash."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        # Three significant digits below a thousand: enough to compare runs, no false
        # precision from a noisy machine.
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    if isinstance(value, list | tuple):
        return ", ".join(fmt(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(headers: list[str], rows: Iterable[list[Any]]) -> str:
    rows = list(rows)
    if not rows:
        return ""
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(out)


def machine_line(*parts: Any) -> str:
    shown = [str(p) for p in parts if p not in (None, "", [])]
    return f"Run: {'; '.join(shown)}." if shown else ""


def loadavg(values: Any) -> str | None:
    if isinstance(values, list) and values:
        return "load average " + ", ".join(f"{v:.1f}" for v in values if isinstance(v, int | float))
    return None


def scalar_table(values: dict[str, Any], headers: tuple[str, str] = ("figure", "value")) -> str:
    return table(list(headers), [[f"`{k}`", v] for k, v in values.items()])


def generic_table(rows: list[dict[str, Any]]) -> str:
    keys: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in keys and not isinstance(value, dict):
                keys.append(key)
    return table(keys, [[row.get(k) for k in keys] for row in rows])


def dict_block(
    data: Any, key: str, caption: str, headers: tuple[str, str] = ("figure", "value")
) -> list[str]:
    """A captioned two-column table of ``data[key]``, or nothing when it is absent or empty."""
    value = get(data, key)
    if isinstance(value, dict) and value:
        return ["", caption, "", scalar_table(value, headers)]
    return []


# A column: its header and where its cell comes from in one item (a key, a path of keys,
# or a function of the item).
Column = tuple[str, "str | tuple[str, ...] | Callable[[Any], Any]"]


def columns_table(columns: Sequence[Column], items: Iterable[Any]) -> str:
    """One row per item, one cell per column; a missing key is a dash."""

    def cell(item: Any, source: Any) -> Any:
        if callable(source):
            return source(item)
        return get(item, *source) if isinstance(source, tuple) else get(item, source)

    return table([h for h, _ in columns], [[cell(i, src) for _, src in columns] for i in items])
