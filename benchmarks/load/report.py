"""Reading a load run's results: requests per phase, and the goals
(docs/reliability.md#r20-concurrency, #r24-throughput, #r25-noisy-neighbour,
#r31-locked-database) that ``run_load.py`` checks and writes."""

from __future__ import annotations

from typing import Any

from locked import locked_goal


def phase_requests(entry: dict[str, Any]) -> int:
    if "requests" in entry:
        return int(entry["requests"])
    return sum(phase_requests(v) for v in entry.values() if isinstance(v, dict))


def _match_goal(m: dict[str, Any]) -> bool:
    """The match goal (r24-throughput): >= 200 pastes matched a second, p99 < 100 ms, no
    error, none refused."""
    return (
        m["served_rps"] >= 200
        and m["refused_429"] == 0
        and m["latency_ms"]["p99"] < 100
        and m["errors"] == 0
    )


def goals(report: dict[str, Any]) -> dict[str, bool]:
    ph = report["phases"]
    out: dict[str, bool] = {}
    if "match" in ph:
        out["match >= 200 req/s, p99 < 100 ms, 0 errors"] = _match_goal(ph["match"])
    for name in ("record", "list"):
        if name in ph:
            r = ph[name]
            out[f"{name} >= 300 req/s, p99 < 100 ms, 0 errors"] = (
                r["rps"] >= 300 and r["latency_ms"]["p99"] < 100 and r["errors"] == 0
            )
    if "match+adversarial" in ph:
        b = ph["match+adversarial"]["benign"]
        a = ph["match+adversarial"]["adversarial"]
        out["benign match >= 200 req/s, p99 < 100 ms, 0 errors while an adversary runs"] = (
            _match_goal(b) and a["errors"] == 0
        )
    if "match+distributed-adversary" in ph:  # r25-noisy-neighbour with no limit to help
        b = ph["match+distributed-adversary"]["benign"]
        a = ph["match+distributed-adversary"]["adversarial"]
        out["benign p99 < 250 ms, 0 errors under a distributed adversary"] = (
            b["latency_ms"]["p99"] < 250 and b["errors"] == 0 and a["errors"] == 0
        )
    if "writers" in ph:
        w = ph["writers"]
        out["writers: 0 errors, all writes present"] = (
            w["write_errors"] == 0
            and w["all_writes_present"]
            and w["match_during_writes"]["errors"] == 0
        )
    if "match+loop" in ph:  # issue 12: the loop's traffic beside the matches
        m, lp = ph["match+loop"]["benign"], ph["match+loop"]["loop"]
        grew = ph["match+loop"]["stored_during_phase"]
        # The bar is the loop's own (issue 12: 0 errors, 0 5xx); the matches beside it share
        # the same cores, so their rate is shown, not held to the match-alone goal.
        out["loop: reports, proposals, votes and matches 0 errors, 0 429, all stored"] = (
            m["errors"] == 0
            and m["refused_429"] == 0
            and lp["errors"] == 0
            and lp["refused_429"] == 0
            and all(grew[k] > 0 for k in ("gap_reports", "proposals", "votes"))
        )
    locked = ph.get("locked", {})
    if "writes" in locked:  # r31: SQLite only (the phase says "skipped" elsewhere)
        out[
            "locked: worker survives, pastes and reads 0 errors, writes 503 + Retry-After "
            "(median < 0.5 s, none past the busy timeout), healthz degraded then ok, nothing lost"
        ] = locked_goal(locked)
    s = report["server"]
    expected_503 = locked.get("writes", {}).get("statuses", {}).get("503", 0)
    out["server: no worker timeouts, 5xx, tracebacks or lock errors"] = not (
        s["worker_timeouts"]
        or s["responses_5xx"]
        or s["tracebacks"]
        or s["database_locked"]
        or s.get("responses_503", 0) != expected_503
    )
    return out
