"""One renderer per benchmark result file, for the performance page.

Each takes the parsed JSON and returns the section's body as lines of Markdown; the page
(``benchmarks/report_md.py``) adds the title, what the benchmark measures and its source.
A renderer shows what it finds and leaves out what is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_format import (
    MISSING,
    fmt,
    generic_table,
    get,
    loadavg,
    machine_line,
    scalar_table,
    table,
)


def render_import(data: dict[str, Any]) -> list[str]:
    machine = get(data, "machine", default={})
    out = [
        machine_line(
            get(data, "when"),
            f"{machine.get('cpus')} CPUs" if machine.get("cpus") else None,
            f"Python {machine.get('python')}" if machine.get("python") else None,
            f"SQLite {machine.get('sqlite')}" if machine.get("sqlite") else None,
            loadavg(machine.get("loadavg_before")),
        ),
        "",
    ]
    rows = []
    for case in get(data, "cases", default=[]) or []:
        rows.append(
            [
                Path(str(case.get("file", ""))).name or MISSING,
                case.get("records"),
                get(case, "import_records_per_s_wall"),
                get(case, "import_records_per_s_cpu"),
                get(case, "sqlite_floor_records_per_s_wall"),
                get(case, "import_over_sqlite_floor_wall"),
                get(case, "reimport_records_per_s_wall"),
                get(case, "export_records_per_s_wall"),
                get(case, "import", "peak_rss_mb"),
                get(case, "import", "parser_peak_rss_mb"),
                case.get("db_mb"),
            ]
        )
    out.append(
        table(
            [
                "file",
                "records",
                "import rec/s (wall)",
                "import rec/s (CPU)",
                "SQLite alone rec/s",
                "import time ÷ SQLite alone",
                "re-import rec/s",
                "export rec/s",
                "peak RSS MB",
                "parser peak RSS MB",
                "database MB",
            ],
            rows,
        )
    )
    layers = get(data, "layers")
    if isinstance(layers, list) and layers and isinstance(layers[0], dict):
        out += ["", "Layers, each against the plain path:", "", generic_table(layers)]
    elif isinstance(layers, dict) and layers:
        out += ["", "Layers, each against the plain path:", "", scalar_table(layers)]
    return out


def render_matcher(data: dict[str, Any]) -> list[str]:
    results = get(data, "results", default=[]) or []
    columns = [
        ("records", "records"),
        ("line p50 µs", "line_p50_us"),
        ("line p99 µs", "line_p99_us"),
        ("naive line µs (extrapolated)", "naive_line_us_extrapolated"),
        ("speed-up vs naive (p50)", "speedup_vs_naive_p50"),
        ("log MB/s (CPU)", "log_mb_s_cpu"),
        ("raw scan MB/s (CPU)", "raw_scan_mb_s_cpu"),
        ("log ÷ raw scan (CPU)", "log_vs_raw_cpu"),
        ("256 KiB paste CPU ms", "paste_256k_cpu_ms"),
        ("scaling max time(2N)/time(N)", "scaling_max_ratio"),
        ("load s", "load_s"),
        ("edit → match s", "edit_to_match_s"),
        ("serialised MB", "serialised_mb"),
        ("peak RSS MB", "peak_rss_mb"),
    ]
    rows = [[r.get("label")] + [r.get(key) for _, key in columns] for r in results]
    out = [table(["pattern set"] + [c for c, _ in columns], rows)]
    scaling = [
        [r.get("label"), kib, ms, ratio]
        for r in results
        for kib, ms, ratio in zip(
            get(r, "scaling", "kib", default=[]) or [],
            get(r, "scaling", "cpu_ms", default=[]) or [],
            [None, *(get(r, "scaling", "ratios", default=[]) or [])],
            strict=False,
        )
    ]
    if scaling:
        out += [
            "",
            "Scaling with paste size (CPU time of one paste; ratio to the paste half its size):",
            "",
            table(["pattern set", "paste KiB", "CPU ms", "time(2N)/time(N)"], scaling),
        ]
    goals = get(data, "goals")
    if isinstance(goals, dict) and goals:
        out += ["", "Goals the benchmark checks:", "", scalar_table(goals, ("figure", "goal"))]
    return out


def render_normalise(data: dict[str, Any]) -> list[str]:
    out = [
        machine_line(
            "quick run (5 MB logs)" if data.get("quick") else None,
            f"{data.get('cpu_count')} CPUs" if data.get("cpu_count") else None,
            f"Python {data.get('python')}" if data.get("python") else None,
            loadavg(data.get("load_average_at_end")),
        ),
        "",
    ]
    rows = [
        [
            r.get("log"),
            r.get("mb"),
            r.get("lines"),
            r.get("mb_per_cpu_s"),
            r.get("mb_per_s"),
            r.get("output_ratio"),
            r.get("peak_traced_mb"),
            "; ".join(r.get("steps") or []) or MISSING,
        ]
        for r in get(data, "rows", default=[]) or []
    ]
    out.append(
        table(
            [
                "log",
                "MB",
                "lines",
                "MB per CPU s",
                "MB/s (wall)",
                "output ÷ input",
                "peak traced MB",
                "steps taken",
            ],
            rows,
        )
    )
    return out


def render_pages(data: dict[str, Any]) -> list[str]:
    meta = get(data, "meta", default={}) or {}
    out = [
        machine_line(
            meta.get("when"),
            meta.get("database"),
            f"{meta['records']:,} records" if isinstance(meta.get("records"), int) else None,
            meta.get("machine"),
            f"Python {meta.get('python')}" if meta.get("python") else None,
            loadavg(meta.get("load_average")),
            meta.get("method"),
            meta.get("headline"),
        ),
        "",
    ]
    rows = [
        [
            c.get("case"),
            c.get("p50_ms"),
            c.get("p95_ms"),
            c.get("p99_ms"),
            c.get("cpu_p95_ms"),
            c.get("cold_ms"),
            c.get("goal_p95_ms"),
            c.get("meets_goal"),
        ]
        for c in get(data, "cases", default=[]) or []
    ]
    out.append(
        table(
            [
                "case",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "CPU p95 ms",
                "cold ms",
                "goal p95 ms",
                "meets goal",
            ],
            rows,
        )
    )
    per_revision = get(data, "per_revision")
    if isinstance(per_revision, dict) and per_revision:
        tag = get(per_revision, "biggest_tag", default={}) or {}
        out += [
            "",
            "Computed once per data revision (the first request after any write pays it), "
            "each against the query it replaced:",
            "",
            table(
                ["figure", "ms", "replaced query ms", "speed-up"],
                [
                    [
                        "tag counts (`/tags/`)",
                        per_revision.get("tag_counts_ms"),
                        per_revision.get("tag_counts_replaced_query_ms"),
                        per_revision.get("tag_counts_speedup"),
                    ],
                    [
                        f"one tag's count ({tag.get('name', '?')}, "
                        f"{fmt(tag.get('records'))} records)",
                        per_revision.get("biggest_tag_count_ms"),
                        per_revision.get("biggest_tag_count_replaced_query_ms"),
                        per_revision.get("biggest_tag_count_speedup"),
                    ],
                ],
            ),
        ]
    return out


def render_similar(data: dict[str, Any]) -> list[str]:
    out = [
        machine_line(
            f"default minimum score {data['default_min_score']}"
            if "default_min_score" in data
            else None,
            f"{data['n_drift_cases']} drifted cases" if "n_drift_cases" in data else None,
            f"{data['n_negative_lines']} negative lines" if "n_negative_lines" in data else None,
            loadavg(data.get("machine_load_avg_at_start")),
        ),
        "",
    ]
    scales = [k for k, v in data.items() if isinstance(v, dict) and "query" in v]
    rows = [
        [
            scale,
            get(data, scale, "templates"),
            get(data, scale, "recall@3"),
            get(data, scale, "false_suggestion_rate"),
            get(data, scale, "query", "cpu_best_of_3_p50_ms"),
            get(data, scale, "query", "cpu_best_of_3_p99_ms"),
            get(data, scale, "build_s"),
            get(data, scale, "load_s"),
            get(data, scale, "index_retained_mb"),
        ]
        for scale in scales
    ]
    out.append(
        table(
            [
                "index",
                "templates",
                "recall@3",
                "false suggestions",
                "query CPU p50 ms",
                "query CPU p99 ms",
                "build s",
                "load s",
                "index MB",
            ],
            rows,
        )
    )
    methods = get(data, "methods")
    if isinstance(methods, dict) and methods:
        out += [
            "",
            "Scoring methods compared (the baseline the chosen score was picked against):",
            "",
            table(
                [
                    "method",
                    "recall@3, no threshold",
                    "threshold at 5% false",
                    "recall@3 at that threshold",
                ],
                [
                    [
                        f"`{m}`",
                        get(v, "recall@3_nothreshold"),
                        get(v, "thr_at_5pct_false"),
                        get(v, "recall@3_at_that_thr"),
                    ]
                    for m, v in methods.items()
                ],
            ),
        ]
    return out


def _phase_row(label: str, side: dict[str, Any], whole: dict[str, Any]) -> list[Any]:
    return [
        label,
        side.get("served_rps", side.get("rps")),
        get(side, "latency_ms", "p50"),
        get(side, "latency_ms", "p99"),
        side.get("errors"),
        side.get("refused_429"),
        whole.get("server_cpu_ms_per_request"),
        whole.get("projected_rps_on_idle_cores"),
    ]


def render_load(data: dict[str, Any]) -> list[str]:
    setup = get(data, "setup", default={}) or {}
    machine = get(data, "machine", default={}) or {}
    out = [
        machine_line(
            data.get("when"),
            f"{machine.get('cpus')} CPUs" if machine.get("cpus") else None,
            loadavg(machine.get("loadavg_at_start")),
            f"{setup.get('database')}, {fmt(setup.get('records'))} records"
            if setup.get("database")
            else None,
            f"{setup.get('workers')} gunicorn workers" if setup.get("workers") else None,
            f"{setup.get('duration_s')} s phases" if setup.get("duration_s") else None,
            setup.get("client"),
            setup.get("clients"),
        ),
        "",
    ]
    rows = []
    for phase, value in (get(data, "phases", default={}) or {}).items():
        if not isinstance(value, dict):
            continue
        if "latency_ms" in value:
            rows.append(_phase_row(phase, value, value))
        for side in ("benign", "adversarial"):
            if isinstance(value.get(side), dict):
                rows.append(_phase_row(f"{phase}: {side}", value[side], value))
        during = value.get("match_during_writes")
        if isinstance(during, dict):
            rows.append(_phase_row(f"{phase}: match beside them", during, value))
    out.append(
        table(
            [
                "phase",
                "req/s served",
                "p50 ms",
                "p99 ms",
                "errors",
                "429s",
                "server CPU ms/request",
                "req/s if the cores were the server's",
            ],
            rows,
        )
    )
    writers = get(data, "phases", "writers")
    if isinstance(writers, dict) and "writes" in writers:
        out += [
            "",
            f"Curator writers: {fmt(writers.get('writer_streams'))} streams, "
            f"{fmt(writers.get('writes'))} writes, {fmt(writers.get('write_errors'))} write "
            f"errors, all present afterwards: {fmt(writers.get('all_writes_present'))}; "
            f"slowest write {fmt(writers.get('slowest_write_ms'))} ms.",
        ]
    server = get(data, "server")
    if isinstance(server, dict) and server:
        out += ["", "Server log over all phases:", "", scalar_table(server)]
    goals = get(data, "goals")
    if isinstance(goals, dict) and goals:
        out += ["", "Goals:", "", scalar_table(goals, ("goal", "met"))]
    return out


def render_fuzz(data: dict[str, Any]) -> list[str]:
    out = [
        machine_line(
            data.get("when"),
            data.get("machine"),
            data.get("source"),
        ),
        "",
        f"{fmt(data.get('examples_total'))} examples, {fmt(data.get('failures'))} failures; "
        f"the whole target {fmt(data.get('wall_s'))} s.",
    ]
    parts = data.get("parts")
    if isinstance(parts, list) and parts:
        out += ["", generic_table(parts)]
    return out


def render_unknown(data: Any) -> list[str]:
    if isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        return [scalar_table(scalars)] if scalars else ["(no top-level figures)"]
    return ["(not an object)"]
