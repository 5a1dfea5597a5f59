"""Renderers for the result files that decide what the code keeps, for the performance page.

Three measurements end in a decision rather than a figure to watch: which importer layers
stay (``import-layers.json``), which read-side layers stay (``pages-layers.json``), and which
gap-folding method the learning loop uses (``gaps.json``). Each section shows the rule the
decision follows beside the figures it rests on, so a reader can check the decision and a
new run can overturn it. Like ``report_sections``, each renderer shows what it finds and
leaves out what is missing.
"""

from __future__ import annotations

import re
from typing import Any

from report_format import (
    MISSING,
    Column,
    columns_table,
    fmt,
    get,
    labelled,
    machine_line,
    median,
    ms,
    obj,
    pct,
    scalar_table,
)
from report_sections import pages_run_line

KEEP_SHARE = 0.20  # an optimisation stays only if it saves this much; when a file states no bar


def _dicts(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)}


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
    if not isinstance(runs, list) or not runs:
        return None
    runs = [r for r in runs if isinstance(r, dict)]
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
    groups = data.get(key) if isinstance(data.get(key), dict) else {}
    rows = [_runs_row(name, runs, records) for name, runs in groups.items()]
    rows = [r for r in rows if r]
    return ["", caption, "", columns_table(RUN_COLUMNS, rows)] if rows else []


def render_import_layers(data: dict[str, Any]) -> list[str]:
    machine = obj(data, "machine")
    commits = obj(data, "commits")
    keep = _keep_share(data.get("share"))
    layers = [{"name": k, **v} for k, v in _dicts(data.get("layers_16_7k")).items()]
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
    meta = obj(data, "meta")
    layers = [{"layer": k, **v} for k, v in _dicts(data.get("layers")).items()]
    rows = [
        {"layer": layer["layer"], **page}
        for layer in layers
        for page in layer.get("pages") or []
        if isinstance(page, dict)
    ]
    keep = next((r["keep_share"] for r in layers if "keep_share" in r), KEEP_SHARE)
    return [
        pages_run_line(meta),
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
        {"method": k, "chosen": k == chosen.get("method"), **v}
        for k, v in _dicts(data.get("methods")).items()
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
    sweep = get(data, "methods", chosen.get("method"), "sweep")
    if isinstance(sweep, dict) and sweep:
        rows = [{"threshold": t, **v} for t, v in sweep.items() if isinstance(v, dict)]
        out += [
            "",
            f"The chosen method across the sweep (`{chosen['method']}`):",
            "",
            columns_table(SWEEP_COLUMNS, rows),
        ]
    redaction = data.get("redaction") or data.get("redact")
    if isinstance(redaction, dict) and redaction:
        out += ["", "Redaction:", "", scalar_table(redaction)]
    if isinstance(data.get("derive"), dict):
        out += ["", _drafting(data["derive"])]
    work = _dicts(data.get("fuzzy_work_per_report"))
    if work:
        out += [
            "",
            "Folding work per report as the index grows (blocking keeps the gaps compared "
            "far below the gaps stored):",
            "",
            columns_table(WORK_COLUMNS, [{"size": k, **v} for k, v in work.items()]),
        ]
    return out
