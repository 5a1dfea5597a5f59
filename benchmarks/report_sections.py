"""One renderer per benchmark result file, for the performance page.

Each takes the parsed JSON and returns the section's body as lines of Markdown; the page
(``benchmarks/report_md.py``) adds the title, what the benchmark measures and its source.
A renderer shows what it finds and leaves out what is missing: each table is a list of
columns naming the key each cell comes from, so a renamed or dropped key is one dash, not
a broken page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_format import (
    MISSING,
    Column,
    columns_table,
    dict_block,
    fmt,
    generic_table,
    get,
    labelled,
    loadavg,
    machine_line,
    ms,
    obj,
    slug,
    table,
)


def _items(data: Any, *path: str) -> list[Any]:
    value = get(data, *path, default=[])
    return value if isinstance(value, list) else []


# The import's section points to the one on its layers, which the page titles so.
IMPORT_LAYERS_TITLE = "Import: what each layer is worth"
IMPORT_COLUMNS: list[Column] = [
    ("file", lambda c: Path(str(c.get("file", ""))).name or MISSING),
    ("records", "records"),
    ("import rec/s (wall)", "import_records_per_s_wall"),
    ("import rec/s (CPU)", "import_records_per_s_cpu"),
    ("SQLite alone rec/s", "sqlite_floor_records_per_s_wall"),
    ("import time ÷ SQLite alone", "import_over_sqlite_floor_wall"),
    ("re-import rec/s", "reimport_records_per_s_wall"),
    ("export rec/s", "export_records_per_s_wall"),
    ("peak RSS MB", ("import", "peak_rss_mb")),
    ("parser peak RSS MB", ("import", "parser_peak_rss_mb")),
    ("database MB", "db_mb"),
]


def render_import(data: dict[str, Any]) -> list[str]:
    machine = obj(data, "machine")
    out = [
        machine_line(
            data.get("when"),
            labelled("CPUs:", machine.get("cpus")),
            labelled("Python", machine.get("python")),
            labelled("SQLite", machine.get("sqlite")),
            loadavg(machine.get("loadavg_before")),
        ),
        "",
        columns_table(IMPORT_COLUMNS, _items(data, "cases"), drop_empty=True),
    ]
    layers = data.get("layers")
    if isinstance(layers, str):  # the layers are measured apart: point to their section
        link = f"[{IMPORT_LAYERS_TITLE}](#{slug(IMPORT_LAYERS_TITLE)})"
        return [*out, "", f"Each layer against the plain path: {link} (`{layers}`)."]
    caption = "Layers, each against the plain path:"
    if isinstance(layers, list) and layers and isinstance(layers[0], dict):
        return [*out, "", caption, "", generic_table(layers)]
    return out + dict_block(data, "layers", caption)


MATCHER_COLUMNS: list[Column] = [
    ("pattern set", "label"),
    ("records", "records"),
    ("line p50 µs", "line_p50_us"),
    ("line p99 µs", "line_p99_us"),
    ("naive line µs (extrapolated)", "naive_line_us_extrapolated"),
    ("speed-up vs naive (p50)", "speedup_vs_naive_p50"),
    ("log MB/s (CPU)", "log_mb_s_cpu"),
    ("raw scan MB/s (CPU)", "raw_scan_mb_s_cpu"),
    ("log ÷ raw scan (CPU)", "log_vs_raw_cpu"),
    ("256 KiB paste CPU ms", "paste_256k_cpu_ms"),
]
MATCHER_BUILD_COLUMNS: list[Column] = [
    ("pattern set", "label"),
    ("load s", "load_s"),
    ("edit → match ms", lambda r: ms(r.get("edit_to_match_s"))),
    ("serialised MB", "serialised_mb"),
    ("peak RSS MB", "peak_rss_mb"),
]


def _scaling_rows(results: list[Any]) -> tuple[list[Any], list[list[Any]]]:
    """A row per pattern set, a column per paste size: the CPU time of one paste, and its
    ratio to the paste half its size (the linear-scaling bar reads along the row)."""
    sizes: list[Any] = []
    rows = []
    for r in results:
        times = dict(zip(_items(r, "scaling", "kib"), _items(r, "scaling", "cpu_ms"), strict=False))
        ratios = dict(
            zip(_items(r, "scaling", "kib")[1:], _items(r, "scaling", "ratios"), strict=False)
        )
        sizes += [k for k in times if k not in sizes]
        rows.append((r.get("label"), times, ratios, r.get("scaling_max_ratio")))
    cells = [
        [
            label,
            *(
                f"{fmt(times.get(k))} (x{fmt(ratios[k])})" if k in ratios else times.get(k)
                for k in sizes
            ),
            worst,
        ]
        for label, times, ratios, worst in rows
        if times
    ]
    return sizes, cells


def render_matcher(data: dict[str, Any]) -> list[str]:
    results = [r for r in _items(data, "results") if isinstance(r, dict)]
    out = [columns_table(MATCHER_COLUMNS, results)]
    build_keys = ("load_s", "edit_to_match_s", "serialised_mb", "peak_rss_mb")
    if any(r.keys() & set(build_keys) for r in results):
        build = columns_table(MATCHER_BUILD_COLUMNS, results, drop_empty=True)
        out += ["", "Loading, editing and memory:", "", build]
    sizes, scaling = _scaling_rows(results)
    if scaling:
        out += [
            "",
            "Scaling with paste size: CPU ms of one paste, and in brackets its ratio to the "
            "paste half its size:",
            "",
            table(["pattern set", *(f"{fmt(k)} KiB" for k in sizes), "worst ratio"], scaling),
        ]
    return out + dict_block(data, "goals", "Goals the benchmark checks:", ("figure", "goal"))


NORMALISE_COLUMNS: list[Column] = [
    ("log", "log"),
    ("MB", "mb"),
    ("lines", "lines"),
    ("MB per CPU s", "mb_per_cpu_s"),
    ("MB/s (wall)", "mb_per_s"),
    ("output ÷ input", "output_ratio"),
    ("peak traced MB", "peak_traced_mb"),
    ("steps taken", lambda r: "; ".join(r.get("steps") or []) or MISSING),
]


def _normalise_section(data: dict[str, Any], columns: list[Column]) -> list[str]:
    """Both normaliser files: the run's machine line, then one row a case."""
    return [
        machine_line(
            "quick run (5 MB logs)" if data.get("quick") else None,
            labelled("CPUs:", data.get("cpu_count")),
            labelled("Python", data.get("python")),
            loadavg(data.get("load_average_at_end")),
        ),
        "",
        columns_table(columns, _items(data, "rows")),
    ]


def render_normalise(data: dict[str, Any]) -> list[str]:
    return _normalise_section(data, NORMALISE_COLUMNS)


NORMALISE_ENVELOPE_COLUMNS: list[Column] = [
    ("envelope", "envelope"),
    ("KiB", "kib"),
    ("CPU ms clean", "clean_cpu_ms"),
    ("CPU ms enveloped", "enveloped_cpu_ms"),
    ("enveloped ÷ clean", "ratio_enveloped_to_clean"),
    ("time(2N)/time(N)", "ratio_2n_to_n"),
    ("steps taken", lambda r: "; ".join(r.get("steps") or []) or MISSING),
]


def render_normalise_envelopes(data: dict[str, Any]) -> list[str]:
    return _normalise_section(data, NORMALISE_ENVELOPE_COLUMNS)


PAGES_COLUMNS: list[Column] = [
    ("case", "case"),
    ("p50 ms", "p50_ms"),
    ("p95 ms", "p95_ms"),
    ("p99 ms", "p99_ms"),
    ("CPU p95 ms", "cpu_p95_ms"),
    ("cold ms", "cold_ms"),
    ("goal p95 ms", "goal_p95_ms"),
    ("meets goal", "meets_goal"),
]
PER_REVISION_COLUMNS: list[Column] = [
    ("figure", "label"),
    ("ms", "ms"),
    ("replaced query ms", "replaced_query_ms"),
    ("speed-up", "speedup"),
]


def pages_run_line(meta: dict[str, Any]) -> str:
    """The run of a ``bench_pages.py`` file (its ``meta``), with or without ``--layers``."""
    records = meta.get("records")
    return machine_line(
        meta.get("when"),
        meta.get("database"),
        f"{fmt(records)} records" if records is not None else None,
        meta.get("machine"),
        labelled("Python", meta.get("python")),
        loadavg(meta.get("load_average")),
        meta.get("method"),
        meta.get("headline"),
    )


def render_pages(data: dict[str, Any]) -> list[str]:
    meta = obj(data, "meta")
    out = [
        pages_run_line(meta),
        "",
        columns_table(PAGES_COLUMNS, _items(data, "cases")),
    ]
    per_revision = get(data, "per_revision")
    if not isinstance(per_revision, dict) or not per_revision:
        return out
    tag = obj(per_revision, "biggest_tag")
    rows = [
        {"label": "tag counts (`/tags/`)", "prefix": "tag_counts"},
        {
            "label": f"one tag's count ({tag.get('name', '?')}, {fmt(tag.get('records'))} records)",
            "prefix": "biggest_tag_count",
        },
    ]
    for row in rows:
        for suffix in ("ms", "replaced_query_ms", "speedup"):
            row[suffix] = per_revision.get(f"{row['prefix']}_{suffix}")
    return [
        *out,
        "",
        "Computed once per data revision (the first request after any write pays it), each "
        "against the query it replaced:",
        "",
        columns_table(PER_REVISION_COLUMNS, rows),
    ]


SIMILAR_COLUMNS: list[Column] = [
    ("index", "scale"),
    ("templates", "templates"),
    ("recall@3", "recall@3"),
    ("false suggestions", "false_suggestion_rate"),
    ("query CPU p50 ms", ("query", "cpu_best_of_3_p50_ms")),
    ("query CPU p99 ms", ("query", "cpu_best_of_3_p99_ms")),
    ("build s", "build_s"),
    ("load s", "load_s"),
    ("index MB", "index_retained_mb"),
]
METHOD_COLUMNS: list[Column] = [
    ("method", lambda m: f"`{m['method']}`"),
    ("recall@3, no threshold", "recall@3_nothreshold"),
    ("threshold at 5% false", "thr_at_5pct_false"),
    ("recall@3 at that threshold", "recall@3_at_that_thr"),
]


def render_similar(data: dict[str, Any]) -> list[str]:
    scales = [{"scale": k, **v} for k, v in data.items() if isinstance(v, dict) and "query" in v]
    out = [
        machine_line(
            labelled("default minimum score", data.get("default_min_score")),
            labelled("drifted cases:", data.get("n_drift_cases")),
            labelled("negative lines:", data.get("n_negative_lines")),
            loadavg(data.get("machine_load_avg_at_start")),
        ),
        "",
        columns_table(SIMILAR_COLUMNS, scales),
    ]
    methods = get(data, "methods")
    if isinstance(methods, dict) and methods:
        rows = [{"method": m, **v} for m, v in methods.items() if isinstance(v, dict)]
        out += [
            "",
            "Scoring methods compared (the baseline the chosen score was picked against):",
            "",
            columns_table(METHOD_COLUMNS, rows),
        ]
    return out


PHASE_COLUMNS: list[Column] = [
    ("phase", "label"),
    ("req/s served", lambda r: r["side"].get("served_rps", r["side"].get("rps"))),
    ("p50 ms", ("side", "latency_ms", "p50")),
    ("p99 ms", ("side", "latency_ms", "p99")),
    ("errors", ("side", "errors")),
    ("429s", ("side", "refused_429")),
    ("server CPU ms/request", ("whole", "server_cpu_ms_per_request")),
    ("req/s if the cores were the server's", ("whole", "projected_rps_on_idle_cores")),
]


def _phase_rows(phases: Any) -> list[dict[str, Any]]:
    """A row per client of each phase: the phase itself, or its benign and hostile sides."""
    rows = []
    for phase, whole in (phases if isinstance(phases, dict) else {}).items():
        if not isinstance(whole, dict):
            continue
        sides = [(phase, whole)] if "latency_ms" in whole else []
        sides += [
            (f"{phase}: {name}", whole[key])
            for key, name in (
                ("benign", "benign"),
                ("adversarial", "adversarial"),
                ("match_during_writes", "match beside them"),
                ("loop", "learning loop"),
            )
            if isinstance(whole.get(key), dict)
        ]
        rows += [{"label": label, "side": side, "whole": whole} for label, side in sides]
    return rows


def render_load(data: dict[str, Any]) -> list[str]:
    setup = obj(data, "setup")
    machine = obj(data, "machine")
    out = [
        machine_line(
            data.get("when"),
            labelled("CPUs:", machine.get("cpus")),
            loadavg(machine.get("loadavg_at_start")),
            labelled("database:", setup.get("database")),
            labelled("records:", fmt(setup.get("records")) if "records" in setup else None),
            labelled("gunicorn workers:", setup.get("workers")),
            labelled("seconds per phase:", setup.get("duration_s")),
            setup.get("client"),
            setup.get("clients"),
        ),
        "",
        columns_table(PHASE_COLUMNS, _phase_rows(get(data, "phases"))),
    ]
    writers = get(data, "phases", "writers")
    if isinstance(writers, dict) and "writes" in writers:
        out += [
            "",
            f"Curator writers: {fmt(writers.get('writer_streams'))} streams, "
            f"{fmt(writers.get('writes'))} writes, {fmt(writers.get('write_errors'))} write "
            f"errors, all present afterwards: {fmt(writers.get('all_writes_present'))}; "
            f"slowest write {fmt(writers.get('slowest_write_ms'))} ms.",
        ]
    loop = get(data, "phases", "match+loop")
    if isinstance(loop, dict) and isinstance(loop.get("stored_during_phase"), dict):
        grew = loop["stored_during_phase"]
        out += [
            "",
            f"Learning loop ({fmt(loop.get('loop_mix'))}): stored during the phase "
            + ", ".join(f"{fmt(v)} {k.replace('_', ' ')}" for k, v in grew.items())
            + ".",
        ]
    out += dict_block(data, "server", "Server log over all phases:", names=False)
    return out + dict_block(data, "goals", "Goals:", ("goal", "met"), names=False)


FUZZ_COLUMNS: list[Column] = [
    ("part", "part"),
    ("properties", "properties"),
    ("examples", "examples"),
    ("wall s", "wall_s"),
    ("ms per example", "ms_per_example"),
]


def render_fuzz(data: dict[str, Any]) -> list[str]:
    out = [
        machine_line(data.get("when"), data.get("machine"), data.get("source")),
        "",
        f"{fmt(data.get('examples_total'))} examples, {fmt(data.get('failures'))} failures; "
        f"the whole target {fmt(data.get('wall_s'))} s.",
    ]
    parts = _items(data, "parts")
    if parts and all(isinstance(p, dict) for p in parts):
        out += ["", columns_table(FUZZ_COLUMNS, parts, drop_empty=True)]
    return out
