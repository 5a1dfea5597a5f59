"""Markdown cells and tables for the performance page (``benchmarks/report_md.py``).

Result files change shape as their benchmarks evolve, so every lookup tolerates a missing
key and every cell renders ``None`` as a dash rather than failing the page.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

MISSING = "—"


def get(data: Any, *path: str | int) -> Any:
    """``data[path[0]][path[1]]…``, or None as soon as a step is missing."""
    for step in path:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def obj(data: Any, *path: str) -> dict[str, Any]:
    """``get(data, *path)`` when it is an object, else an empty one: a part that changed
    shape loses its figures, not the section."""
    value = get(data, *path)
    return value if isinstance(value, dict) else {}


def items(data: Any, *path: str) -> list[Any]:
    """``get(data, *path)`` when it is a list, else an empty one."""
    value = get(data, *path)
    return value if isinstance(value, list) else []


def dicts(data: Any, *path: str) -> dict[str, dict[str, Any]]:
    """The entries of ``get(data, *path)`` that are objects."""
    return {k: v for k, v in obj(data, *path).items() if isinstance(v, dict)}


def named_rows(data: Any, *path: str, key: str = "name") -> list[dict[str, Any]]:
    """A row per object in ``get(data, *path)``, its name in the file under ``key``."""
    return [{key: k, **v} for k, v in dicts(data, *path).items()]


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


def pct(share: Any, signed: bool = True, places: int = 0) -> str:
    """A share as a percent, signed and whole by default: the layers' decisions rest on a
    bar in whole percent, and a tenth of a percent is far inside the noise of a shared
    machine; a share of records found (not a timing) may show ``places`` decimals."""
    if not isinstance(share, int | float) or isinstance(share, bool):
        return fmt(share)
    return f"{share:{'+' if signed else ''}.{places}%}"


def ms(seconds: Any) -> float | None:
    """Seconds as milliseconds, for a figure far below a second."""
    return seconds * 1000 if isinstance(seconds, int | float) else None


def median(values: Any) -> float | None:
    numbers = [v for v in values if isinstance(v, int | float)] if isinstance(values, list) else []
    return statistics.median(numbers) if numbers else None


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def table(headers: list[str], rows: Iterable[list[Any]]) -> str:
    rows = list(rows)
    if not rows:
        return ""
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(out)


def labelled(label: str, value: Any) -> str | None:
    return f"{label} {value}" if value not in (None, "") else None


def machine_line(*parts: Any) -> str:
    shown = [str(p) for p in parts if p not in (None, "", [])]
    return f"Run: {'; '.join(shown)}." if shown else ""


def loadavg(values: Any) -> str | None:
    if isinstance(values, list) and values:
        return "load average " + ", ".join(f"{v:.1f}" for v in values if isinstance(v, int | float))
    return None


def host_line(data: Any, *more: Any) -> str:
    """The run line of a file that keeps its host under ``machine`` (the server benchmarks'
    shape): when, the CPUs, the load average at the start, then ``more``."""
    machine = obj(data, "machine")
    return machine_line(
        get(data, "when"),
        labelled("CPUs:", machine.get("cpus")),
        loadavg(machine.get("loadavg_at_start")),
        *more,
    )


def scalar_table(
    values: dict[str, Any], headers: tuple[str, str] = ("figure", "value"), names: bool = True
) -> str:
    """Key and value per row: a key set in code when it names a figure in the file, in plain
    words (``names=False``) when it is a phrase such as a goal."""

    def key(k: str) -> str:
        return f"`{k}`" if names else k.replace("_", " ")

    return table(list(headers), [[key(k), v] for k, v in values.items()])


def generic_table(rows: list[dict[str, Any]]) -> str:
    keys: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in keys and not isinstance(value, dict):
                keys.append(key)
    return table(keys, [[row.get(k) for k in keys] for row in rows])


def dict_block(
    data: Any,
    key: str,
    caption: str,
    headers: tuple[str, str] = ("figure", "value"),
    names: bool = True,
) -> list[str]:
    """A captioned two-column table of ``data[key]``, or nothing when it is absent or empty."""
    value = get(data, key)
    if isinstance(value, dict) and value:
        return ["", caption, "", scalar_table(value, headers, names)]
    return []


# A column: its header and where its cell comes from in one item (a key, a path of keys,
# or a function of the item).
Column = tuple[str, "str | tuple[str, ...] | Callable[[Any], Any]"]


def columns_table(columns: Sequence[Column], items: Iterable[Any], drop_empty: bool = False) -> str:
    """One row per object in ``items``, one cell per column; a missing key is a dash.
    ``drop_empty`` leaves out a column no object has a value for (a figure the benchmark no
    longer measures)."""

    def cell(item: Any, source: Any) -> Any:
        if callable(source):
            return source(item)
        return get(item, *source) if isinstance(source, tuple) else get(item, source)

    rows = [[cell(i, src) for _, src in columns] for i in items if isinstance(i, dict)]
    keep = [
        k
        for k in range(len(columns))
        if not drop_empty or any(row[k] not in (None, "", MISSING) for row in rows)
    ]
    return table([columns[k][0] for k in keep], [[row[k] for k in keep] for row in rows])


# A result file no renderer knows: its figures as tables, whatever their nesting, so a new
# benchmark shows up readable before anyone writes its section.
_LONG_TEXT = 100  # a longer string reads as a sentence, not as a cell
_MAX_ROWS = 40


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list) or (
        isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)
    )


def flatten(data: dict[str, Any], prefix: str = "", depth: int = 2) -> dict[str, Any]:
    """Nested keys as dotted paths (``a.b``) down to ``depth``; deeper parts or lists of
    objects are counted, not spelled out."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth > 0:
            flat |= flatten(value, f"{name}.", depth - 1)
        elif _scalar(value):
            flat[name] = value
        else:
            flat[name] = f"({len(value)} entries)"
    return flat


def nested_table(value: Any) -> str:
    """A table for any JSON value: a row per object when it is a list or a dict of objects,
    a figure/value table otherwise."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return generic_table([flatten(v, depth=1) for v in value[:_MAX_ROWS]])
        return fmt(value)
    if not isinstance(value, dict) or not value:
        return fmt(value)
    if all(isinstance(v, dict) for v in value.values()):
        rows = [{"name": k, **flatten(v, depth=1)} for k, v in value.items()]
        if len({k for row in rows for k in row}) <= 12:
            return generic_table(rows[:_MAX_ROWS])
    flat = list(flatten(value).items())
    shown = scalar_table(dict(flat[:_MAX_ROWS]))
    more = len(flat) - _MAX_ROWS
    return shown + (f"\n\n({more} more figures in the file)" if more > 0 else "")


def render_unknown(data: Any) -> list[str]:
    if isinstance(data, list):
        return [nested_table(data)]
    if not isinstance(data, dict):
        return ["(not an object)"]
    out: list[str] = []
    scalars = {k: v for k, v in data.items() if _scalar(v)}
    texts = {k: v for k, v in scalars.items() if isinstance(v, str) and len(v) > _LONG_TEXT}
    for key, text in texts.items():
        out += [f"`{key}`: {text}", ""]
    short = {k: v for k, v in scalars.items() if k not in texts}
    if short:
        out += ["Top-level figures:", "", scalar_table(short), ""]
    for key, value in data.items():
        if key not in scalars and (block := nested_table(value)) not in ("", MISSING):
            out += [f"`{key}`:", "", block, ""]
    return out or ["(no figures)"]
