"""One renderer per benchmark result file, for the performance page, in page order.

Each takes the parsed JSON and returns the section's body as lines of Markdown; the page
(``benchmarks/report_md.py``) adds the title, what the benchmark measures and its source.
A renderer shows what it finds and leaves out what is missing: each table is a list of
columns naming the key each cell comes from, so a renamed or dropped key is one dash, not
a broken page.

Three measurements end in a decision rather than a figure to watch: which gap-folding
method the learning loop uses (``gaps.json``), which read-side layers stay
(``pages-layers.json``) and which importer layers stay (``import-layers.json``). Their
sections show the rule the decision follows beside the figures it rests on, so a reader
can check the decision and a new run can overturn it.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from report_format import (
    MISSING,
    Column,
    columns_table,
    dict_block,
    dicts,
    fmt,
    get,
    host_line,
    items,
    labelled,
    loadavg,
    machine_line,
    median,
    ms,
    named_rows,
    obj,
    pct,
    slug,
    table,
)

KEEP_SHARE = 0.20  # an optimisation stays only if it saves this much; when a file states no bar

# The matcher (matcher.json).

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
        kib = items(r, "scaling", "kib")
        times = dict(zip(kib, items(r, "scaling", "cpu_ms"), strict=False))
        ratios = dict(zip(kib[1:], items(r, "scaling", "ratios"), strict=False))
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
    results = [r for r in items(data, "results") if isinstance(r, dict)]
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


# The normaliser (normalise.json, normalise_envelopes.json).


def _steps(row: dict[str, Any]) -> str:
    return "; ".join(row.get("steps") or []) or MISSING


NORMALISE_COLUMNS: list[Column] = [
    ("log", "log"),
    ("MB", "mb"),
    ("lines", "lines"),
    ("MB per CPU s", "mb_per_cpu_s"),
    ("MB/s (wall)", "mb_per_s"),
    ("output ÷ input", "output_ratio"),
    ("peak traced MB", "peak_traced_mb"),
    ("steps taken", _steps),
]
NORMALISE_ENVELOPE_COLUMNS: list[Column] = [
    ("envelope", "envelope"),
    ("KiB", "kib"),
    ("CPU ms clean", "clean_cpu_ms"),
    ("CPU ms enveloped", "enveloped_cpu_ms"),
    ("enveloped ÷ clean", "ratio_enveloped_to_clean"),
    ("time(2N)/time(N)", "ratio_2n_to_n"),
    ("steps taken", _steps),
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
        columns_table(columns, items(data, "rows")),
    ]


def render_normalise(data: dict[str, Any]) -> list[str]:
    return _normalise_section(data, NORMALISE_COLUMNS)


def render_normalise_envelopes(data: dict[str, Any]) -> list[str]:
    return _normalise_section(data, NORMALISE_ENVELOPE_COLUMNS)


# Similar-message suggestions (similar.json).

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


# Older wordings compiled beside the records (aliases.json).

ALIASES_COLUMNS: list[Column] = [
    ("aliases", "aliases"),
    ("patterns", "patterns"),
    ("matcher RSS MB", "rss_mb_matcher"),
    ("ratio to none", ("ratio", "memory")),
    ("process RSS MB", "rss_mb_process"),
    ("ratio to none", ("ratio", "process_memory")),
    ("line CPU µs", "line_cpu_us"),
    ("ratio to none", ("ratio", "line_cpu")),
    ("256 KiB paste CPU ms", "paste_256k_cpu_ms"),
    ("ratio to none", ("ratio", "paste_256k_cpu")),
    ("older-wording line CPU µs", "old_line_cpu_us"),
    ("older-wording lines matched", "old_lines_matched"),
]


def render_aliases(data: dict[str, Any]) -> list[str]:
    results = data.get("results") or {}
    ratios = data.get("ratios") or {}
    rows = [
        {**row, "ratio": ratios.get(n, {"memory": 1.0, "process_memory": 1.0, "line_cpu": 1.0,
                                        "paste_256k_cpu": 1.0})}
        for n, row in results.items()
        if isinstance(row, dict)
    ]  # fmt: skip
    return [
        machine_line(
            labelled("records:", data.get("records")),
            labelled("goal:", (data.get("goals") or {}).get("ratio_to_no_aliases")),
        ),
        "",
        columns_table(ALIASES_COLUMNS, rows),
        "",
        "The older-wording lines are rendered from the aliases' own templates: without "
        "aliases most fall to the similarity fallback (slower, and unmatched). The matcher's "
        "memory grows with the patterns it compiles (an alias costs what a record's pattern "
        "costs: its Hyperscan expression, its string, its key list); the process's memory "
        "and the latency of today's pastes barely move.",
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
    methods = named_rows(data, "methods", key="method")
    if methods:
        out += [
            "",
            "Scoring methods compared (the baseline the chosen score was picked against):",
            "",
            columns_table(METHOD_COLUMNS, methods),
        ]
    return out


# Gap folding (gaps.json): a decision.

GAP_METHOD_COLUMNS: list[Column] = [
    ("method", lambda r: f"`{r['method']}`" + (" (chosen)" if r.get("chosen") else "")),
    ("threshold", "best_threshold"),
    ("precision", ("best", "precision")),
    ("recall", ("best", "recall")),
    ("F1", ("best", "f1")),
    ("gaps", ("best", "gaps")),
]
SWEEP_COLUMNS: list[Column] = [
    ("threshold", "threshold"),
    ("precision", "precision"),
    ("recall", "recall"),
    ("F1", "f1"),
    ("gaps", "gaps"),
]
WORK_COLUMNS: list[Column] = [
    ("gaps in the index", lambda r: fmt(int(r["size"])) if r["size"].isdigit() else r["size"]),
    ("gaps compared, mean", "mean_gaps_compared"),
    ("gaps compared, max", "max_gaps_compared"),
    ("ms per report", "ms_per_report"),
]


def _ms(seconds: Any) -> str:
    shown = fmt(ms(seconds))
    return f"{shown} ms" if shown != MISSING else shown


def _drafting(derive: dict[str, Any]) -> str:
    return (
        f"Drafting: of {fmt(derive.get('gaps_with_2_or_more_samples'))} gaps with two or "
        f"more samples, the draft pattern derived from the template matches every sample in "
        f"{fmt(derive.get('draft_pattern_matches_all'))} and the matcher admits "
        f"{fmt(derive.get('draft_admitted_by_matcher'))}; admission (a compile) takes "
        f"{_ms(derive.get('admission_compile_s_median'))} at the median, "
        f"{_ms(derive.get('admission_compile_s_max'))} at most."
    )


def render_gaps(data: dict[str, Any]) -> list[str]:
    chosen = obj(data, "chosen")
    methods = [
        {**r, "chosen": r["method"] == chosen.get("method")}
        for r in named_rows(data, "methods", key="method")
    ]
    out = [
        machine_line(
            labelled("labelled set", f"`{data['dataset']}`" if data.get("dataset") else None),
            labelled("pastes:", fmt(data.get("pastes")) if "pastes" in data else None),
            labelled("with error lines:", data.get("reports_with_error_lines")),
            labelled("labels:", data.get("labels")),
            labelled("same-label pairs:", data.get("same_label_pairs")),
            labelled("report orders averaged:", data.get("orders_averaged")),
        ),
    ]
    if data.get("rule"):
        out += ["", f"Threshold rule: {data['rule']}; the method with the best F1 then wins."]
    if methods:
        out += ["", "Each method at its threshold:", "", columns_table(GAP_METHOD_COLUMNS, methods)]
    in_code = chosen.get("in_code")
    if chosen.get("method"):
        line = f"Decision: `{chosen['method']}` at {fmt(chosen.get('threshold'))}"
        if isinstance(in_code, dict):
            line += "; the code's defaults: " + ", ".join(
                f"{k} {fmt(v)}" for k, v in in_code.items()
            )
        out += ["", line + "."]
    sweep = named_rows(data, "methods", chosen.get("method"), "sweep", key="threshold")
    if sweep:
        out += [
            "",
            f"The chosen method across the sweep (`{chosen['method']}`):",
            "",
            columns_table(SWEEP_COLUMNS, sweep),
        ]
    if isinstance(data.get("derive"), dict):
        out += ["", _drafting(data["derive"])]
    work = named_rows(data, "fuzzy_work_per_report", key="size")
    if work:
        out += [
            "",
            "Folding work per report as the index grows (blocking keeps the gaps compared "
            "far below the gaps stored):",
            "",
            columns_table(WORK_COLUMNS, work),
        ]
    return out


# Pages (pages.json, pages-postgresql.json) and what each read-side layer is worth
# (pages-layers.json, pages-layers-postgresql.json): a decision.

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


def _pages_run_line(meta: dict[str, Any]) -> str:
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
    out = [
        _pages_run_line(obj(data, "meta")),
        "",
        columns_table(PAGES_COLUMNS, items(data, "cases")),
    ]
    per_revision = obj(data, "per_revision")
    if not per_revision:
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


PAGE_LAYERS = {
    "links": "`reverse()` cache: plain arguments slotted into a pattern reversed once per "
    "URL name, against `reverse()` per link",
    "tag_paginator": "raw-SQL paginator behind a tag page (count cached per revision, the "
    "cheaper of two plans per slice), against Django's `Paginator` over the ORM queryset",
}
PAGE_LAYER_COLUMNS: list[Column] = [
    ("layer", lambda r: f"`{r['layer']}`"),
    ("page", "page"),
    ("distinct URLs", "distinct_requests"),
    ("requests", "n"),
    (
        "CPU ms: layered / plain",
        lambda r: f"{fmt(r.get('layered_cpu_ms'))} / {fmt(r.get('plain_cpu_ms'))}",
    ),
    (
        "wall ms: layered / plain",
        lambda r: f"{fmt(r.get('layered_wall_ms'))} / {fmt(r.get('plain_wall_ms'))}",
    ),
    ("saved, CPU", lambda r: pct(r.get("saved_share_cpu"))),
    ("saved, wall", lambda r: pct(r.get("saved_share_wall"))),
]
PAGE_DECISION_COLUMNS: list[Column] = [
    ("layer", lambda r: f"`{r['layer']}`"),
    ("what it is", lambda r: PAGE_LAYERS.get(r["layer"], MISSING)),
    ("best saving, CPU", lambda r: pct(r.get("best_saved_share_cpu"))),
    ("bar", lambda r: pct(r.get("keep_share"), signed=False)),
    ("pays its way", "pays_its_way"),
    ("in the code", "in_the_code"),
]


def render_page_layers(data: dict[str, Any]) -> list[str]:
    layers = named_rows(data, "layers", key="layer")
    rows = [
        {"layer": layer["layer"], **page}
        for layer in layers
        for page in items(layer, "pages")
        if isinstance(page, dict)
    ]
    keep = next((r["keep_share"] for r in layers if "keep_share" in r), KEEP_SHARE)
    return [
        _pages_run_line(obj(data, "meta")),
        "",
        f"Rule: keep a layer only if it saves at least {pct(keep, signed=False)} of a page's "
        "server time by itself, on the page it serves best (in CPU time: the machine is "
        "shared, and wall time moves with the neighbours).",
        "",
        columns_table(PAGE_DECISION_COLUMNS, layers),
        "",
        "Per page, medians of alternating layered and plain requests:",
        "",
        columns_table(PAGE_LAYER_COLUMNS, rows),
    ]


# Import (import.json, import-quick.json), what each of its layers is worth
# (import-layers.json: a decision), and COPY on PostgreSQL (import-postgresql.json).

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
        columns_table(IMPORT_COLUMNS, items(data, "cases"), drop_empty=True),
    ]
    layers = data.get("layers")
    if isinstance(layers, str):  # the layers are measured apart: point to their section
        link = f"[{IMPORT_LAYERS_TITLE}](#{slug(IMPORT_LAYERS_TITLE)})"
        out += ["", f"Each layer against the plain path: {link} (`{layers}`)."]
    return out


def _keep_share(text: Any) -> float:
    found = re.search(r"at least (0?\.\d+)", text) if isinstance(text, str) else None
    return float(found.group(1)) if found else KEEP_SHARE


def _round_shares(layer: dict[str, Any]) -> list[float]:
    """1 - full / without, round by round (the two runs of a round ran back to back)."""
    full, without = layer.get("full_wall_s") or [], layer.get("without_wall_s") or []
    return [1 - f / w for f, w in zip(full, without, strict=False) if w]


def _wall_share(layer: dict[str, Any]) -> str:
    shares = _round_shares(layer)
    shown = pct(layer.get("share_wall_median"))
    if len(shares) > 1:
        shown += f" ({pct(min(shares))} to {pct(max(shares))})"
    return shown


def _pair(layer: dict[str, Any], key: str) -> str:
    full, without = median(layer.get(f"full_{key}")), median(layer.get(f"without_{key}"))
    return f"{fmt(full)} / {fmt(without)}"


IMPORT_LAYER_COLUMNS: list[Column] = [
    ("switched off (everything else kept)", lambda r: r.get("what") or r["name"]),
    ("rounds", "rounds"),
    ("wall s, full / without (medians)", lambda r: _pair(r, "wall_s")),
    ("CPU s, full / without (medians)", lambda r: _pair(r, "cpu_s")),
    ("share, wall (median, range)", _wall_share),
    ("share, CPU (median)", lambda r: pct(r.get("share_cpu_median"))),
    ("decision", "verdict"),
]
RUN_COLUMNS: list[Column] = [
    ("importer", "name"),
    ("runs", "runs"),
    ("wall s (median)", "wall_s"),
    ("CPU s (median)", "cpu_s"),
    ("records/s (median wall)", "rate"),
    ("peak RSS MB", "peak_rss_mb"),
    ("load average (1 min)", "load1"),
]


def _span(values: list[float]) -> str | None:
    if not values:
        return None
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low} to {high}"


def _runs_row(name: str, runs: Any, records: int) -> dict[str, Any] | None:
    """One importer's runs, summarised by their medians."""
    runs = [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
    if not runs:
        return None
    wall = median([r.get("wall_s") for r in runs])
    loads = [r.get("load1") for r in runs if isinstance(r.get("load1"), int | float)]
    return {
        "name": name.replace("_", " "),
        "runs": len(runs),
        "wall_s": wall,
        "cpu_s": median([r.get("cpu_s") for r in runs]),
        "rate": round(records / wall) if wall else None,
        "peak_rss_mb": median([r.get("peak_rss_mb") for r in runs]),
        "load1": _span(loads),
    }


def _runs_table(data: dict[str, Any], key: str, records: int, caption: str) -> list[str]:
    rows = [_runs_row(name, runs, records) for name, runs in obj(data, key).items()]
    rows = [r for r in rows if r]
    return ["", caption, "", columns_table(RUN_COLUMNS, rows)] if rows else []


def render_import_layers(data: dict[str, Any]) -> list[str]:
    machine = obj(data, "machine")
    commits = obj(data, "commits")
    keep = _keep_share(data.get("share"))
    layers = named_rows(data, "layers_16_7k")
    out = [
        machine_line(
            labelled("CPUs:", machine.get("cpus")),
            labelled("Python", machine.get("python")),
            labelled("SQLite", machine.get("sqlite")),
            machine.get("note"),
        ),
        "",
        f"Rule: keep a layer only if it saves at least {pct(keep, signed=False)} of the "
        "import's time by itself. A layer's share is 1 - (time with it ÷ time without it), "
        "round by round (the two runs of a round ran back to back); the decisions rest on "
        "the medians and on CPU time, which a busy machine moves far less than wall time.",
    ]
    if commits:
        out += [
            "",
            "Commits: "
            + "; ".join(f"{k.replace('_', ' ')} `{v}`" for k, v in commits.items())
            + ".",
        ]
    if layers:
        out += [
            "",
            "Each layer switched off alone in the importer as it was (16.7k records):",
            "",
            columns_table(IMPORT_LAYER_COLUMNS, layers),
        ]
    copies = get(data, "sql_copies_in_the_one_process_importer_16_7k")
    if isinstance(copies, dict):
        with_, without = copies.get("with") or [], copies.get("without") or []
        out += [
            "",
            "The SQL copies measured again in the one-process importer (16.7k records, "
            f"{len(with_)} rounds): median wall {fmt(median([r.get('wall_s') for r in with_]))} s "
            f"with them, {fmt(median([r.get('wall_s') for r in without]))} s without; share "
            f"{pct(copies.get('share_wall_median'))} wall, {pct(copies.get('share_cpu_median'))} "
            f"CPU, under the {pct(keep, signed=False)} bar.",
        ]
    out += _runs_table(
        data, "before_after_16_7k", 16_720, "Before and after, interleaved (16.7k records):"
    )
    out += _runs_table(data, "runs_200k", 200_000, "Runs on the synthesised 200k-record file:")
    return out + _decision(layers)


def _layer_name(layer: dict[str, Any]) -> str:
    return str(layer.get("what") or layer["name"]).split(":")[0]


def _decision(layers: list[dict[str, Any]]) -> list[str]:
    """Kept and removed layers by name; the variants of one layer ("the same, ...") and the
    plain path itself are rows of the table, not layers."""
    layers = [r for r in layers if not str(r.get("what", "")).startswith(("the same", "all of"))]
    verdicts = {"kept": [], "removed": [], "later": []}
    for layer in layers:
        verdict = str(layer.get("verdict", ""))
        kind = "kept" if verdict == "kept" else "later" if "removed" in verdict else None
        kind = "removed" if verdict == "removed" else kind
        if kind:
            verdicts[kind].append(_layer_name(layer))
    if not verdicts["kept"] and not verdicts["removed"]:
        return []
    removed = verdicts["removed"] + [f"{n} (after the remeasure)" for n in verdicts["later"]]
    return [
        "",
        f"Decision: kept {'; '.join(verdicts['kept']) or 'none'}. Removed: {'; '.join(removed)}.",
    ]


COPY_COLUMNS: list[Column] = [
    ("file", "file"),
    ("records", "records"),
    ("executemany s", "executemany_wall_s"),
    ("COPY s", "copy_wall_s"),
    ("executemany records/s", "executemany_records_per_s"),
    ("COPY records/s", "copy_records_per_s"),
    ("COPY / executemany (wall)", "copy_over_executemany_wall"),
    ("same export", "same_export"),
]


def render_copy(data: dict[str, Any]) -> list[str]:
    return [
        host_line(data),
        "",
        columns_table(COPY_COLUMNS, items(data, "cases")),
        "",
        f"COPY kept (at most 0.8 of executemany's wall time on the largest file, same "
        f"export): {fmt(data.get('keep_copy'))}.",
    ]


# Load on loopback (load.json, load-postgresql.json).

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
# The clients a phase may run beside each other, by key, and their name in the table.
PHASE_SIDES = (
    ("benign", "benign"),
    ("adversarial", "adversarial"),
    ("match_during_writes", "match beside them"),
    ("loop", "learning loop"),
    ("pastes", "pastes while locked"),
    ("reads", "record pages while locked"),
)


def _phase_rows(phases: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A row per client of each phase: the phase itself, or its benign and hostile sides."""
    rows = []
    for phase, whole in phases.items():
        sides = [(phase, whole)] if "latency_ms" in whole else []
        sides += [
            (f"{phase}: {name}", whole[key])
            for key, name in PHASE_SIDES
            if isinstance(whole.get(key), dict)
        ]
        rows += [{"label": label, "side": side, "whole": whole} for label, side in sides]
    return rows


def render_load(data: dict[str, Any]) -> list[str]:
    setup = obj(data, "setup")
    phases = dicts(data, "phases")
    out = [
        host_line(
            data,
            labelled("database:", setup.get("database")),
            labelled("records:", fmt(setup.get("records")) if "records" in setup else None),
            labelled("gunicorn workers:", setup.get("workers")),
            labelled("seconds per phase:", setup.get("duration_s")),
            setup.get("client"),
            setup.get("clients"),
        ),
        "",
        columns_table(PHASE_COLUMNS, _phase_rows(phases)),
    ]
    writers = phases.get("writers", {})
    if "writes" in writers:
        out += [
            "",
            f"Curator writers: {fmt(writers.get('writer_streams'))} streams, "
            f"{fmt(writers.get('writes'))} writes, {fmt(writers.get('write_errors'))} write "
            f"errors, all present afterwards: {fmt(writers.get('all_writes_present'))}; "
            f"slowest write {fmt(writers.get('slowest_write_ms'))} ms.",
        ]
    loop = phases.get("match+loop", {})
    grew = obj(loop, "stored_during_phase")
    if grew:
        out += [
            "",
            f"Learning loop ({fmt(loop.get('loop_mix'))}): stored during the phase "
            + ", ".join(f"{fmt(v)} {k.replace('_', ' ')}" for k, v in grew.items())
            + ".",
        ]
    out += _locked_lines(phases.get("locked", {}))
    out += dict_block(data, "server", "Server log over all phases:", names=False)
    return out + dict_block(data, "goals", "Goals:", ("goal", "met"), names=False)


def _locked_lines(locked: dict[str, Any]) -> list[str]:
    """The locked phase (docs/reliability.md#r31-locked-database): what the writes, the
    health check and the task worker did while SQLite's write lock was held."""
    writes = obj(locked, "writes")
    if not writes:
        return []
    latency = obj(writes, "latency_ms_503")
    worker = obj(locked, "worker")
    statuses = ", ".join(f"{fmt(n)} answered {code}" for code, n in obj(writes, "statuses").items())
    health = ", ".join(f"{fmt(n)} {k}" for k, n in obj(locked, "healthz_during").items())
    return [
        "",
        f"Write lock held {fmt(locked.get('lock_seconds'))} s by another process: "
        f"{fmt(writes.get('sent'))} writes, {statuses} (Retry-After "
        f"{', '.join(writes.get('retry_after') or []) or '-'} s; 503 in p50 "
        f"{fmt(latency.get('p50'))} ms, p99 {fmt(latency.get('p99'))} ms, max "
        f"{fmt(latency.get('max'))} ms, the web busy timeout being "
        f"{fmt(locked.get('web_busy_timeout_s'))} s); sent again after the lock, "
        f"{fmt(writes.get('reports_stored'))} of {fmt(writes.get('sent'))} stored. "
        f"/healthz during the lock: {health}; after: {fmt(locked.get('healthz_after'))}. "
        f"The lock holder's own write stored: {fmt(locked.get('holder_write_stored'))}. "
        f"Task worker alive after the lock: {fmt(worker.get('alive_after_lock'))} "
        f"({fmt(worker.get('lock_retries_logged'))} lock retries logged), a task queued "
        f"after it: {fmt(worker.get('task_queued_after_lock'))}.",
    ]


# Scale on PostgreSQL (scale-<records>.json).

SIZE_COLUMNS: list[Column] = [
    ("file", "file"),
    ("records", "records"),
    ("import s", "import_s"),
    ("import records/s", "import_records_per_s"),
    ("matcher build s", "matcher_build_s"),
    ("build peak RSS MB", "matcher_build_peak_rss_mb"),
    ("build cores busy", "matcher_build_cores"),
    ("fresh host serves after s", "fresh_host_serves_s"),
    ("worker RSS MB", ("worker_memory", "rss_mb")),
    ("worker PSS MB", ("worker_memory", "pss_mb")),
    ("2 workers' PSS / 1", "two_workers_pss_over_one"),
]


def _render_scale_rebuild(row: dict[str, Any]) -> list[str]:
    """The rebuild after a 1% import at the largest size, as the worker runs it."""
    if not row:
        return []
    after, again = obj(row, "after_import"), obj(row, "after_delete")
    stats = obj(after, "stats")
    cores = (
        f", {fmt(round(after['cpu_s'] / after['build_s'], 2))} cores busy on average"
        if after.get("cpu_s") and after.get("build_s")
        else ""
    )
    met = "met" if row.get("met") else "not met"
    parts = (
        f" The store took {fmt(row['published_mb'])} MB of new parts for it."
        if row.get("published_mb") is not None
        else ""
    )
    if stats.get("similarity_resumed"):
        parts += (
            f" The similarity index was carried on over the new records "
            f"({fmt(stats.get('similarity_s'))} s), not built again."
        )
    full = obj(row, "full_build")
    if full:
        parts += (
            f" The full build was timed in the same run, with the same code, from an empty "
            f"store and cache (peak {fmt(round(full.get('peak_rss_mb') or 0))} MB)."
        )
    return [
        "",
        f"Rebuild after an import of 1% new records ({fmt(row.get('imported'))} into "
        f"{fmt(row.get('records'))}, imported in {fmt(row.get('import_s'))} s): the "
        f"`warm_matcher` task's build took {fmt(after.get('build_s'))} s against the full "
        f"build's {fmt(row.get('full_build_s'))} s, {fmt(row.get('ratio'))} of it (goal at "
        f"most {fmt(row.get('goal_ratio'))}: {met}); {fmt(stats.get('shards_compiled'))} of "
        f"{fmt(stats.get('shards'))} shards compiled{cores}; its cache: "
        f"{fmt(row.get('cache'))}. Deleting the same records again: "
        f"{fmt(again.get('build_s'))} s.{parts}",
    ]


def render_scale(data: dict[str, Any]) -> list[str]:
    sizes = [s for s in items(data, "sizes") if isinstance(s, dict)]
    out = [host_line(data)]
    settings = obj(data, "postgresql")
    if settings:
        out[0] += " PostgreSQL: " + ", ".join(f"{k} {fmt(v)}" for k, v in settings.items()) + "."
    if data.get("mutate"):
        out[0] += f" Synthesised copies differ from the real records by: {data['mutate']}."
    out += ["", columns_table(SIZE_COLUMNS, sizes, drop_empty=True)]
    if sizes:
        where = sizes[-1].get("matcher_build_where")
        out += ["", f"Matcher build: {fmt(where)}."]
    for note in items(data, "notes"):
        out += ["", f"Note: {note}"]
    for size in sizes:
        out += _render_scale_rebuild(obj(size, "rebuild_after_import"))
    for size in sizes:
        again = obj(size, "pages_measured")
        if again:
            load = loadavg(obj(again, "machine").get("loadavg_at_start")) or "no load average"
            out += [
                "",
                f"The pages at {fmt(size.get('records'))} records were measured again, "
                f"{fmt(again.get('when'))} ({fmt(again.get('how'))}), on the database this run "
                f"left; {load}.",
            ]
        pages = [p for p in items(size, "pages") if isinstance(p, dict)]
        calibration = pages[0].get("calibration_ms") if pages else None
        if calibration:
            out += [
                "",
                f"A fixed Python workload took {fmt(calibration[0])} ms before the pages at "
                f"{fmt(size.get('records'))} records and {fmt(calibration[-1])} ms after: how "
                "fast the machine ran during them.",
            ]
    cases: dict[str, list[Any]] = {}
    goals: dict[str, tuple[Any, Any]] = {}
    for size in sizes:
        for page in items(size, "pages"):
            if isinstance(page, dict):
                name = str(page.get("case"))
                row = cases.setdefault(name, [])
                row += [page.get("p95_ms"), page.get("cpu_p95_ms")]
                goal, p95 = page.get("goal_p95_ms"), page.get("p95_ms")
                met = None if goal is None or p95 is None else "yes" if p95 <= goal else "no"
                goals[name] = (goal, met)  # the largest size's, the last one written
    wall, cpu = obj(data, "p95_scaled_over_baseline"), obj(data, "cpu_p95_scaled_over_baseline")
    if cases:
        heads = ["page"]
        for s in sizes:
            heads += [
                f"p95 ms at {fmt(s.get('records'))}",
                f"CPU p95 ms at {fmt(s.get('records'))}",
            ]
        heads += ["ratio (wall)", "ratio (CPU)", "goal p95 ms", "meets goal (largest)"]
        rows = [[n, *v, wall.get(n), cpu.get(n), *goals[n]] for n, v in cases.items()]
        out += [
            "",
            table(heads, rows),
            "",
            "The goal is for the wall p95, which holds the database server's time; the CPU "
            "p95 is the serving process's alone (the database's is not in it), the figure "
            "to compare between sizes when the machine is busy. Uncached searches are "
            "distinct queries each sent once, so no per-revision page cache answers them.",
        ]
    return out


# The learning loop (loop.json).

PASTE_ARMS = (
    ("paste_path_production_interval", "production flush interval"),
    ("paste_path", "flushing every second"),
)
PASTE_COLUMNS: list[Column] = [
    ("usage counting", "label"),
    ("flush every (s)", "flush_seconds"),
    ("on req/s", "on_req_per_s"),
    ("off req/s", "off_req_per_s"),
    ("on/off", "ratio_on_over_off"),
    ("CPU on/off", "cpu_ratio_on_over_off"),
    ("goal", "goal_ratio"),
    ("meets goal", "meets_goal"),
]
USAGE_COST_COLUMNS: list[Column] = [
    ("counting one paste (µs)", "count_match_us"),
    ("one flush of keys", "flush_keys"),
    ("flush median ms", "flush_ms_median"),
    ("flush max ms", "flush_ms_max"),
    ("projected on/off at production interval", "projected_ratio_at_production_interval"),
]
QUEUE_COLUMNS: list[Column] = [
    ("work-queue section", "case"),
    ("rows", "rows"),
    ("cold ms", "cold_ms"),
    ("p50 ms", "p50_ms"),
    ("p95 ms", "p95_ms"),
    ("goal ms", "goal_ms"),
    ("meets goal", "meets_goal"),
]


def render_loop(data: dict[str, Any]) -> list[str]:
    """The paste path with usage counting on against the same build with it off,
    alternated paste by paste, and the work queue's sections at scale."""
    meta = obj(data, "meta")
    scale = ", ".join(
        f"{meta[k]:,} {k.replace('_', ' ')}"
        for k in ("records", "gaps", "votes", "proposals", "usage_rows")
        if isinstance(meta.get(k), int)
    )
    arms = [{**obj(data, key), "label": label} for key, label in PASTE_ARMS]
    return [
        f"Scale: {scale}." if scale else "",
        "",
        columns_table(PASTE_COLUMNS, arms),
        "",
        columns_table(USAGE_COST_COLUMNS, [obj(data, "usage_costs")]),
        "",
        columns_table(QUEUE_COLUMNS, items(data, "sections")),
    ]


# What the code says (explain.json, explain-pages.json).

KINDS = ("function", "condition", "both", "values", "declared", "sentence")
EXPLAIN_COLUMNS: list[Column] = [
    ("records of", "name"),
    ("records", "records"),
    *((k, lambda r, k=k: pct(r.get(k), signed=False, places=1)) for k in KINDS),
]
EXPLAIN_TIME_COLUMNS: list[Column] = [
    ("language", "name"),
    ("p50 ms per record", "p50"),
    ("p99 ms per record", "p99"),
]
EXPLAIN_PAGE_COLUMNS: list[Column] = [
    ("case", "case"),
    ("with (CPU ms)", "with_cpu_mean_ms"),
    ("without (CPU ms)", "without_cpu_mean_ms"),
    ("ratio", "ratio"),
    ("goal", "goal_ratio"),
    ("meets goal", "meets_goal"),
]


def render_explain(data: dict[str, Any]) -> list[str]:
    groups = [*named_rows(data, "languages"), *named_rows(data, "repos")]
    return [
        columns_table(EXPLAIN_COLUMNS, groups),
        "",
        columns_table(EXPLAIN_TIME_COLUMNS, named_rows(data, "time_per_record_ms")),
    ]


def render_explain_pages(data: dict[str, Any]) -> list[str]:
    cases = ("record_page_warm", "record_page_rerendered", "result_cards")
    rows = [{"case": c, **obj(data, c), "goal_ratio": data.get("goal_ratio")} for c in cases]
    return [columns_table(EXPLAIN_PAGE_COLUMNS, rows)]


# The compiled matcher store (store.json).

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
STARTS = (
    ("fresh_host", "fresh host (empty local cache)"),
    ("warm_local_cache", "same host again (local cache)"),
)


REBUILD_COLUMNS: list[Column] = [
    ("records", "records"),
    ("imported", "imported"),
    ("shard target", "shard_target"),
    ("shards", "shards"),
    ("full build s", "full_s"),
    ("full build CPU s", "full_cpu_s"),
    ("after the import s", "again_s"),
    ("after the import CPU s", "again_cpu_s"),
    ("shards compiled", "again_shards_compiled"),
    ("patterns compiled", "again_patterns_compiled"),
    ("ratio", "ratio"),
    ("goal", "goal"),
    ("met", "met"),
]
TRADEOFF_COLUMNS: list[Column] = [
    ("layout", "layout"),
    ("shards", "shards"),
    ("line CPU p50 µs", "line_cpu_p50_us"),
    ("8 KiB paste CPU p50 ms", "paste_8kib_cpu_p50_ms"),
]


def _rebuild_rows(rebuild: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for size in items(rebuild, "sizes"):
        full, again = obj(size, "full"), obj(size, "after_import")
        rows.append(
            {
                "records": size.get("records"),
                "imported": size.get("imported"),
                "shard_target": full.get("shard_target"),
                "shards": full.get("shards"),
                "full_s": full.get("seconds"),
                "full_cpu_s": full.get("cpu_s"),
                "again_s": again.get("seconds"),
                "again_cpu_s": again.get("cpu_s"),
                "again_shards_compiled": again.get("shards_compiled"),
                "again_patterns_compiled": again.get("patterns_compiled"),
                "ratio": size.get("ratio"),
                "goal": rebuild.get("goal_ratio"),
                "met": size.get("met"),
            }
        )
    return rows


def _render_rebuild(data: dict[str, Any]) -> list[str]:
    rebuild = obj(data, "rebuild")
    if not rebuild:
        return []
    paste = obj(rebuild, "paste")
    out = [
        "",
        "A full build from an empty cache on every core, then the build after an import of "
        "1% new records (the newest last, as the holder orders them) from that cache, as the "
        "holder builds (with the similarity index); ratio: the second's seconds over the "
        "first's (goal, issue 24: at most 0.1 at 10^6 records).",
        "",
        host_line(rebuild),
        "",
        columns_table(REBUILD_COLUMNS, _rebuild_rows(rebuild)),
    ]
    if paste:
        out += [
            "",
            "What the shards cost a paste: the dataset's "
            f"{fmt(paste.get('patterns'))} patterns in one shard and in the layout's, the same "
            "lines and 8 KiB paste matched by each in turns, input by input "
            f"({fmt(paste.get('rounds'))} passes; goal: at most 1.05):",
            "",
            columns_table(TRADEOFF_COLUMNS, items(paste, "rows")),
            "",
            f"Layout over one shard: line {fmt(paste.get('line_ratio'))}, "
            f"8 KiB paste {fmt(paste.get('paste_ratio'))}.",
        ]
    return out


def render_store(data: dict[str, Any]) -> list[str]:
    return [
        host_line(
            data,
            labelled("database:", data.get("database")),
            labelled("records:", fmt(data.get("records"))),
        ),
        "",
        columns_table(START_COLUMNS, [{"label": label, **obj(data, k)} for k, label in STARTS]),
        "",
        columns_table(MEMORY_COLUMNS, items(data, "memory")),
        "",
        f"Two workers over one (PSS of arbiter and workers): {fmt(data.get('two_over_one_pss'))} "
        f"with the preload, {fmt(data.get('two_over_one_pss_without_preload'))} without.",
        *_render_rebuild(data),
        *dict_block(data, "goals", "Goals:", ("goal", "bound"), names=False),
    ]


# Fuzzing (fuzz.json).

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
    parts = items(data, "parts")
    if parts and all(isinstance(p, dict) for p in parts):
        out += ["", columns_table(FUZZ_COLUMNS, parts, drop_empty=True)]
    return out


# Learning a codebase (learn.json).

LEARN_COLUMNS: list[Column] = [
    ("repository", "repo"),
    ("language", "name"),
    ("files read", "files"),
    ("sites", "sites"),
    ("records", "records"),
    ("dataset records", "dataset_records"),
    ("reproduced", "reproduced"),
    ("recall", lambda r: pct(r.get("recall"), signed=False, places=1)),
    ("same pattern", "same_pattern"),
    ("extra", "extra"),
]
LEARN_RUN_COLUMNS: list[Column] = [
    ("repository", "name"),
    ("revision", lambda r: str(r.get("revision", ""))[:12] or MISSING),
    ("status", lambda r: " ".join(str(r.get(k, "")) for k in ("status", "reason")).strip()),
    ("seconds", "seconds"),
    ("read s", "read_s"),
    ("extract s", "extract_s"),
    ("records s", "records_s"),
    ("peak RSS MiB", "peak_rss_mib"),
    ("skipped", lambda r: ", ".join(f"{k} {v}" for k, v in obj(r, "skipped").items())),
]


def render_learn(data: dict[str, Any]) -> list[str]:
    repos = items(data, "repos")
    rows = [
        {"repo": repo.get("name"), **row}
        for repo in repos
        if isinstance(repo, dict)
        for row in [*items(repo, "languages"), obj(repo, "all")]
        if row
    ]
    return [
        host_line(data),
        "",
        columns_table(LEARN_COLUMNS, rows),
        "",
        columns_table(LEARN_RUN_COLUMNS, repos),
        *_learn_precision(data, repos),
        *_learn_misses(data, repos),
    ]


LEARN_PRECISION_COLUMNS: list[Column] = [
    ("repository", "name"),
    ("extra records", "extra"),
    ("sample", "sample"),
    ("judged", "judged"),
    ("a message a user could paste", "kept"),
    ("precision", lambda r: pct(r.get("precision"), signed=False, places=1)),
]


def _learn_precision(data: dict[str, Any], repos: list[Any]) -> list[str]:
    """Per repository, the hand judgements (``learn-precision.jsonl``) of its sample of extra
    records; only those of the sample in this result count, so a re-run whose sample moved
    shows fewer judged rather than a precision of other sites."""
    verdicts = {
        (j.get("repo"), j.get("path"), j.get("line"), j.get("template")): j.get("verdict")
        for j in items(data, "learn-precision")
        if isinstance(j, dict)
    }
    if not verdicts:
        return []
    rows = []
    for repo in repos:
        if not isinstance(repo, dict) or repo.get("status") != "ok":
            continue
        judged = []
        for extra in items(repo, "extra_sample"):
            path, _, line = str(get(extra, "site") or "").rpartition(":")
            key = (repo.get("name"), path, int(line) if line.isdigit() else line)
            verdict = verdicts.get((*key, get(extra, "template")))
            if isinstance(verdict, bool):
                judged.append(verdict)
        rows.append(
            {
                "name": repo.get("name"),
                "extra": get(repo, "all", "extra"),
                "sample": len(items(repo, "extra_sample")),
                "judged": len(judged),
                "kept": sum(judged),
                "precision": sum(judged) / len(judged) if judged else None,
            }
        )
    return [
        "",
        textwrap.fill(
            "Precision: each sampled extra record was read by hand with its source around "
            "the line, at the revision, and judged a message a user could paste (a runtime "
            "error or warning that reaches a log, an exception, a panic or an HTTP/CLI error) "
            "or not (test-only or debug code, a bare name, a non-message string); the "
            "verdicts, with a reason each, are in `benchmarks/results/learn-precision.jsonl`. "
            "Goal: at least 90%.",
            width=90,
            break_on_hyphens=False,
        ),
        "",
        columns_table(LEARN_PRECISION_COLUMNS, rows),
    ]


def _learn_misses(data: dict[str, Any], repos: list[Any]) -> list[str]:
    """The misses of each repository's sample, counted by the cause read off by hand
    (``learn-misses.jsonl``), most frequent first; a sampled miss with no cause recorded
    is counted as not looked at."""
    causes = {
        (c.get("repo"), c.get("path"), c.get("template")): c.get("cause")
        for c in items(data, "learn-misses")
        if isinstance(c, dict)
    }
    counted: Counter[tuple[Any, str]] = Counter()
    for repo in repos:
        if not isinstance(repo, dict):
            continue
        for miss in items(repo, "miss_sample"):
            key = (repo.get("name"), get(miss, "file"), get(miss, "template"))
            missing = get(miss, "missing")
            counted[(key[0], str(causes.get(key) or "not looked at"))] += (
                missing if isinstance(missing, int) else 1
            )
    if not counted:
        return []
    rows = [
        {"repo": repo, "cause": cause, "misses": n}
        for (repo, cause), n in sorted(counted.items(), key=lambda kv: (str(kv[0][0]), -kv[1]))
    ]
    return [
        "",
        "Misses of the sample, by cause (read by hand, `benchmarks/results/learn-misses.jsonl`):",
        "",
        columns_table([("repository", "repo"), ("cause", "cause"), ("misses", "misses")], rows),
    ]


# Whole logs at the engine's pace (logs.json).


def render_logs(data: dict[str, Any]) -> list[str]:
    rows = [
        ("log", f"{data['log_mb']} MB, {data['log_lines']:,} lines, {data['answers']} answers"),
        ("raw Hyperscan scan (CPU)", f"{data['raw_scan_mb_s']} MB/s"),
        ("`Matcher.match` end to end (CPU)", f"{data['match_mb_s']} MB/s"),
        ("ours ÷ raw scan", f"{data['match_vs_raw']} (goal: ≥ 0.5)"),
        *(
            [
                (
                    "the log given as text (encoded first), ÷ raw scan",
                    f"{data['match_text_vs_raw']}",
                ),
                (
                    "the line literals' database, compiled by the first whole log",
                    f"{data['lines_database_compile_s']} s",
                ),
            ]
            if "match_text_vs_raw" in data
            else []
        ),
        ("peak RSS, one-line match", f"{data['rss_mb_one_line']} MB"),
        ("peak RSS, matching the log read whole", f"{data['rss_mb_whole_log']} MB"),
    ]
    out = ["| figure | value |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)]
    whole = data["stage_shares"]
    paste = data.get("paste_stage_shares") or {}
    out += [
        "",
        "Share of each stage of `Matcher.match` (profiled calls; a stage inside "
        "another one, such as the scan that picks the lines kept, counts in both):",
        "",
    ]
    out += ["| stage | whole log | one-line paste |", "| --- | --- | --- |"]
    for k in [*whole, *(k for k in paste if k not in whole)]:
        cells = [f"{d[k]:.0%}" if k in d else MISSING for d in (whole, paste)]
        out.append(f"| {k} | {cells[0]} | {cells[1]} |")
    ratio = data.get("match_vs_raw")
    if ratio:
        parts = sorted(((v, k) for k, v in whole.items() if k != "other" and v), reverse=True)
        out += [
            "",
            f"What the multiple is made of: a whole log takes {1 / ratio:.1f} times the raw "
            "scan's CPU time; by share of ours, "
            + ", ".join(f"{k} {v:.0%}" for v, k in parts)
            + " (the lines kept: the scan for the patterns' line literals and the normaliser's "
            "trigger scan of the whole log, the lines picked; then normalising, scanning and "
            "reporting only them).",
        ]
    big = data.get("big")
    if big:
        out += [
            "",
            "A big log as `manage.py match` reads it (blocks of lines, gzip as a "
            "stream, the lines that matter matched), in a fresh process; the one-line peak "
            "is the matcher's own with its database of line literals, except on the "
            "`plain_first_log` row, where the log is the process's first whole log and the "
            "database is compiled while it is read:",
            "",
        ]
        out += [
            "| input | log MB | file MB | peak RSS MB, one line | peak RSS MB, the log | "
            "growth MB (goal ≤ 300) | CPU MB/s | lines kept |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, b in big.items():
            out.append(
                f"| {name} | {b['log_mb']} | {b['file_mb']} | {b['rss_mb_one_line']} | "
                f"{b['rss_mb_log']} | {b['rss_mb_growth']} | {b['mb_s']} | "
                f"{b['excerpt_share']:.1%} |"
            )
    env = data.get("envelopes_top1")
    if env:
        out += [
            "",
            f"The public labelled set ({env['cases']} exact cases) passed through each "
            f"envelope: top-1 {env['clean']:.1%} clean; worst drop "
            f"{env['worst_drop_points']} points (goal: ≤ 1):",
            "",
        ]
        out += ["| envelope | top-1 |", "| --- | --- |"]
        out += [f"| {k} | {v:.1%} |" for k, v in env["by_envelope"].items()]
    return out


# Learn jobs end to end (learn-jobs.json).

LEARN_JOB_COLUMNS: list[Column] = [
    ("job", "name"),
    ("revision", lambda r: str(r.get("revision", ""))[:12] or MISSING),
    ("status", lambda r: " ".join(str(r.get(k, "")) for k in ("status", "reason")).strip()),
    ("wall s", "seconds"),
    ("CPU s", "cpu_s"),
    ("goal s", "goal_s"),
    ("met", lambda r: {True: "yes", False: "no"}.get(r.get("met"), MISSING)),
    ("learn s", "learn_s"),
    ("matcher s", "matcher_s"),
    ("start s", "setup_s"),
    ("files read", "files_read"),
    ("sites", "sites"),
    ("created", "created"),
    ("updated", "updated"),
    ("unchanged", "unchanged"),
    ("gone", "gone"),
    ("peak RSS MiB", "peak_rss_mib"),
    ("git peak MiB", "git_peak_rss_mib"),
]
LEARN_FLOOR_COLUMNS: list[Column] = [
    ("repository", "name"),
    ("language", "language"),
    ("status", lambda r: " ".join(str(r.get(k, "")) for k in ("status", "reason")).strip()),
    ("files", "files"),
    ("MiB", "mib"),
    ("cat-file s", "read_s"),
    ("parse + query s", "parse_query_s"),
    ("total s", "seconds"),
]
LEARN_PASTE_COLUMNS: list[Column] = [
    ("figure", "figure"),
    ("dataset only", "dataset"),
    ("with learned records", "with_learned"),
    ("ratio", "ratio"),
]
LEARN_PASTE_LEARN_COLUMNS: list[Column] = [
    ("repository", "repo"),
    ("revision", lambda r: str(r.get("revision", ""))[:12] or MISSING),
    ("status", lambda r: " ".join(str(r.get(k, "")) for k in ("status", "reason")).strip()),
    ("wall s", "seconds"),
    ("CPU s", "cpu_s"),
    ("learn s", "learn_s"),
    ("matcher s", "matcher_s"),
    ("files read", "files_read"),
    ("sites", "sites"),
    ("created", "created"),
    ("updated", "updated"),
    ("unchanged", "unchanged"),
    ("peak RSS MiB", "peak_rss_mib"),
]


def render_learn_jobs(data: dict[str, Any]) -> list[str]:
    lines = [
        host_line(data, labelled("database:", data.get("database"))),
        "",
        columns_table(LEARN_JOB_COLUMNS, items(data, "jobs"), drop_empty=True),
        "",
        "The floor, same run: the same files read with one `git cat-file --batch`, then "
        "parsed with tree-sitter plus one query.",
        "",
        columns_table(LEARN_FLOOR_COLUMNS, items(data, "floor"), drop_empty=True),
    ]
    paste = obj(data, "paste")
    if not paste:
        return lines
    records = obj(paste, "records")
    lines += [
        "",
        "The paste path with the five repositories learned beside the dataset "
        f"(goal: ratio at most {fmt(paste.get('goal_ratio'))}): "
        + (
            f"{fmt(records.get('dataset'))} records, then {fmt(records.get('with_learned'))}."
            if records
            else " ".join(str(paste.get(k, "")) for k in ("status", "reason")).strip()
        ),
        "",
        columns_table(LEARN_PASTE_LEARN_COLUMNS, items(paste, "learns"), drop_empty=True),
        "",
        columns_table(LEARN_PASTE_COLUMNS, items(paste, "figures"), drop_empty=True),
    ]
    return lines


HISTORY_COLUMNS: list[Column] = [
    ("learn", "name"),
    ("status", lambda r: " ".join(str(r.get(k, "")) for k in ("status", "reason")).strip()),
    ("releases", "releases"),
    ("wall s", "seconds"),
    ("learn s", "learn_s"),
    ("CPU s", "cpu_s"),
    ("matcher s", "matcher_s"),
    ("peak RSS MiB", "peak_rss_mib"),
    ("files read", "files_read"),
    ("created", "created"),
    ("updated", "updated"),
    ("aliases", "aliases"),
    ("removed sites", "removed"),
    ("DB MiB before", "db_before_mib"),
    ("DB MiB after", "db_after_mib"),
]
HISTORY_EVAL_COLUMNS: list[Column] = [
    ("database", "database"),
    ("stratum", "stratum"),
    ("cases", "cases"),
    ("top-1", "top1"),
    ("top-3", "top3"),
    ("no match", "no_match"),
]


def render_history(data: dict[str, Any]) -> list[str]:
    dataset = obj(data, "dataset")
    lines = [
        host_line(data, labelled("database:", data.get("database"))),
        "",
        "Into the dataset's database "
        f"({fmt(dataset.get('size_mib'))} MiB, imported in {fmt(dataset.get('import_s'))} s), "
        "one after the other:",
        "",
        columns_table(HISTORY_COLUMNS, items(data, "histories"), drop_empty=True),
        "",
        "Scale: every release, each into an empty database.",
        "",
        columns_table(HISTORY_COLUMNS, items(data, "scale"), drop_empty=True),
        "",
        "The public labelled pastes through the app's matcher, before and after:",
        "",
        columns_table(
            HISTORY_EVAL_COLUMNS,
            [row for run in items(data, "eval") for row in items(run, "strata")],
            drop_empty=True,
        ),
    ]
    sample = obj(data, "sample")
    if sample:
        lines += [
            "",
            f"Site identity, on a hand-labelled sample of the walk's decisions "
            f"(`{sample.get('file')}`, {sample.get('repo')} from {sample.get('since')}): "
            f"of {fmt(sample.get('paired'))} pairings other than an unchanged site "
            f"(reworded, function renamed, moved), {fmt(sample.get('merged_mistakes'))} "
            f"merged two sites; of {fmt(sample.get('apart'))} sites removed beside the most "
            f"alike site new in the same release, {fmt(sample.get('split_mistakes'))} were "
            "one site split. Drawn from "
            f"{fmt(sample.get('pairings_total'))} such pairings and "
            f"{fmt(sample.get('apart_total'))} such removals.",
        ]
    return lines
