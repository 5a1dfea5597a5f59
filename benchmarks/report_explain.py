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
