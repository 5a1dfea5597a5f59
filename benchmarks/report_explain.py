"""Performance-page sections for "What the code says" (``bench_explain.py`` and
``bench_explain_pages.py``): the share of records explained, and the page cost ratio."""

from __future__ import annotations

from typing import Any

from report_format import get, table

KINDS = ("function", "condition", "both", "values", "declared", "sentence")


def _percent(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, float) else "—"


def render_explain(data: dict[str, Any]) -> list[str]:
    rows = []
    for group in ("languages", "repos"):
        for name, row in (get(data, group, default={}) or {}).items():
            rows.append([name, row.get("records"), *(_percent(row.get(k)) for k in KINDS)])
    times = get(data, "time_per_record_ms", default={}) or {}
    return [
        table(["records of", "records", *KINDS], rows),
        "",
        table(
            ["language", "p50 ms per record", "p99 ms per record"],
            [[name, t.get("p50"), t.get("p99")] for name, t in times.items()],
        ),
    ]


def render_explain_pages(data: dict[str, Any]) -> list[str]:
    cases = ("record_page_warm", "record_page_rerendered", "result_cards")
    return [
        table(
            ["case", "with (CPU ms)", "without (CPU ms)", "ratio", "goal", "meets goal"],
            [
                [
                    case,
                    get(data, case, "with_cpu_mean_ms"),
                    get(data, case, "without_cpu_mean_ms"),
                    get(data, case, "ratio"),
                    data.get("goal_ratio"),
                    get(data, case, "meets_goal"),
                ]
                for case in cases
            ],
        )
    ]


PASTE_ARMS = (
    ("paste_path_production_interval", "production flush interval"),
    ("paste_path", "flushing every second"),
)


def render_loop(data: dict[str, Any]) -> list[str]:
    """The learning loop (``bench_loop.py``): the paste path with usage counting on against
    the same build with it off, alternated paste by paste, and the work queue's sections at
    scale."""
    meta = data.get("meta", {}) or {}
    scale = ", ".join(
        f"{meta[k]:,} {k.replace('_', ' ')}"
        for k in ("records", "gaps", "votes", "proposals", "usage_rows")
        if isinstance(meta.get(k), int)
    )
    costs = data.get("usage_costs", {}) or {}
    return [
        f"Scale: {scale}." if scale else "",
        "",
        table(
            [
                "usage counting",
                "flush every (s)",
                "on req/s",
                "off req/s",
                "on/off",
                "CPU on/off",
                "goal",
                "meets goal",
            ],
            [
                [
                    label,
                    get(data, key, "flush_seconds"),
                    get(data, key, "on_req_per_s"),
                    get(data, key, "off_req_per_s"),
                    get(data, key, "ratio_on_over_off"),
                    get(data, key, "cpu_ratio_on_over_off"),
                    get(data, key, "goal_ratio"),
                    get(data, key, "meets_goal"),
                ]
                for key, label in PASTE_ARMS
            ],
        ),
        "",
        table(
            [
                "counting one paste (µs)",
                "one flush of keys",
                "flush median ms",
                "flush max ms",
                "projected on/off at production interval",
            ],
            [
                [
                    costs.get("count_match_us"),
                    costs.get("flush_keys"),
                    costs.get("flush_ms_median"),
                    costs.get("flush_ms_max"),
                    costs.get("projected_ratio_at_production_interval"),
                ]
            ],
        ),
        "",
        table(
            ["work-queue section", "rows", "cold ms", "p50 ms", "p95 ms", "goal ms", "meets goal"],
            [
                [
                    s.get("case"),
                    s.get("rows"),
                    s.get("cold_ms"),
                    s.get("p50_ms"),
                    s.get("p95_ms"),
                    s.get("goal_ms"),
                    s.get("meets_goal"),
                ]
                for s in data.get("sections", []) or []
            ],
        ),
    ]
