"""The performance page's section on the compiled matcher store (``store.json``): apart
from ``report_sections.py`` so each renderer module stays small."""

from __future__ import annotations

from typing import Any

from report_format import (
    Column,
    columns_table,
    dict_block,
    fmt,
    labelled,
    loadavg,
    machine_line,
    obj,
)

START_COLUMNS: list[Column] = [
    ("start", "label"),
    ("first match s", "first_match_s"),
    ("of which fetch + load s", "store_fetch_and_load_s"),
    ("matched", "matched"),
    ("loaded from store", "loaded_from_store"),
    ("compiled", "compiled"),
]
MEMORY_COLUMNS: list[Column] = [
    ("workers", "workers"),
    ("preload", "preload"),
    ("processes", "processes"),
    ("workers that served", "workers_that_served"),
    ("PSS MiB", "pss_mib"),
    ("USS MiB", "uss_mib"),
    ("RSS MiB", "rss_mib"),
]


def render_store(data: dict[str, Any]) -> list[str]:
    machine = obj(data, "machine")
    starts = [
        {"label": label, **obj(data, key)}
        for key, label in (
            ("fresh_host", "fresh host (empty local cache)"),
            ("warm_local_cache", "same host again (local cache)"),
        )
    ]
    memory = data.get("memory")
    return [
        machine_line(
            data.get("when"),
            labelled("CPUs:", machine.get("cpus")),
            loadavg(machine.get("loadavg_at_start")),
            labelled("database:", data.get("database")),
            labelled("records:", fmt(data.get("records"))),
        ),
        "",
        columns_table(START_COLUMNS, starts),
        "",
        columns_table(MEMORY_COLUMNS, memory if isinstance(memory, list) else []),
        "",
        f"Two workers over one (PSS of arbiter and workers): {fmt(data.get('two_over_one_pss'))} "
        f"with the preload, {fmt(data.get('two_over_one_pss_without_preload'))} without.",
        *dict_block(data, "goals", "Goals:", ("goal", "bound"), names=False),
    ]
