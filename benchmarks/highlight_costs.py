"""Highlighting cost of a pathological snippet per lexer: the absolute figure behind
docs/reliability.md#r7-highlighter (the suite checks only that the cost grows linearly).
Run by ``bench_pages.py``, which has set Django up; results go into ``pages.json``."""

from __future__ import annotations

from typing import Any

import timing

HIGHLIGHT_GOAL_S = 1.0  # docs/reliability.md#r7-highlighter


def highlight_costs(tries: int) -> dict[str, Any]:
    """Highlighting a 100 KiB pathological snippet (an unterminated string of backslashes,
    then unclosed comments) with each lexer, uncached: the median of ``tries`` values
    (``benchmarks/timing.py``). The suite checks only that the cost grows linearly
    (tests/test_highlight.py)."""
    from kb.browse.highlight import _html_lines, highlight_snippet

    n = 100 * 1024 // 12
    code = '"' + "\\" * (5 * n) + "a" * (5 * n) + "\n" + "/*" * n
    out: dict[str, Any] = {"snippet_bytes": len(code.encode()), "goal_s": HIGHLIGHT_GOAL_S}
    for path in ("x.rs", "x.py", "x.java", "x.go"):

        def uncached(path: str = path) -> None:
            _html_lines.cache_clear()  # each value highlights afresh, as a first view does
            highlight_snippet(code, path, start=1, error_line=1)

        one = timing.time_call(f"highlight {path}", uncached, values=tries)
        out[path] = {
            "wall_s": round(one.wall.median(), 4),
            "cpu_s": round(one.cpu.median(), 4),
            "meets_goal": one.wall.median() < HIGHLIGHT_GOAL_S,
        }
    return out
