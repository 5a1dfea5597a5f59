"""Whole-log throughput with root-cause ordering against the same run without it.

Ordering a whole log's groups (`kb.engine.rootcause`: chained exceptions found from their
markers, then the groups placed root cause first) must not cost the whole-log path more
than a tenth of its throughput. Both sides are the same matcher (the real records, with
similarity) on the same logs in the same process; only `Matcher.root_cause_order` differs,
and the two sides are timed value by value in turn (``benchmarks/timing.py``), so a
neighbour's burst on this shared machine hits both sides; the ratio is of their median CPU
times, with whether the difference is significant as ``pyperf compare_to`` judges it.

Two logs: the matcher benchmark's whole log (INFO chatter with 1% error lines, no chained
exceptions: the ordering costs three marker searches) and the same log with a chained
Java exception (three `Caused by:` links of real messages) and a chained Python traceback
every 200 lines (the ordering walks every line of them).

Run: `.venv/bin/python benchmarks/bench_order.py [--quick] [--results=DIR]`
Writes benchmarks/results/order.json (or into DIR), with the timings' raw values beside it
(order.pyperf.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
from pathlib import Path

import pyperf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import timing  # noqa: E402 - beside this file, found through the line above
from matcher_data import load_specs, make_log, render  # noqa: E402

from kb.engine import Matcher, PatternSpec, report  # noqa: E402 - the module, patched to time its step

CACHE = REPO / ".cache" / "matcher-bench"
RESULTS = REPO / "benchmarks" / "results"
BAR = 0.9  # throughput with ordering / without, at least
REASON_KINDS = [  # reason text -> short column name in the results
    ("root cause", "root cause"),
    ("innermost known", "innermost known"),
    ("consequence", "consequence"),
    ("first error", "first error"),
    ("first seen", "first seen"),
]


def chained_log(specs: list[PatternSpec], base: str, every: int = 200, seed: int = 9) -> str:
    """``base`` with a chained Java exception and a chained Python traceback every
    ``every`` lines, their links real records' messages."""
    rng = random.Random(seed)

    def msg() -> str:
        return render(specs[rng.randrange(len(specs))], rng).replace("\n", " ")

    out: list[str] = []
    for i, line in enumerate(base.split("\n")):
        out.append(line)
        if i % every == every // 2:
            out += [
                f"2026-11-30T01:00:00.000Z ERROR app::module: request {i} failed",
                f"com.example.ServiceException: {msg()}",
                "\tat com.example.Service.call(Service.java:42)",
                f"Caused by: com.example.StoreException: {msg()}",
                "\tat com.example.Store.get(Store.java:17)",
                "\t... 9 more",
                f"Caused by: java.io.IOException: {msg()}",
                "\tat java.base/java.net.Socket.connect(Socket.java:633)",
                "\t... 14 more",
            ]
        elif i % every == 0 and i:
            out += [
                "Traceback (most recent call last):",
                '  File "/app/db.py", line 12, in connect',
                "    return driver.connect(dsn)",
                f"OSError: {msg()}",
                "",
                "The above exception was the direct cause of the following exception:",
                "",
                "Traceback (most recent call last):",
                '  File "/app/main.py", line 30, in <module>',
                "    db = connect()",
                f"RuntimeError: {msg()}",
            ]
    return "\n".join(out)


def measure(
    name: str, m: Matcher, log: str, runs: int, kept: list[pyperf.Benchmark]
) -> dict[str, object]:
    """Median CPU time of ``runs`` values on each side, timed in turn, and the ratio."""

    def side(on: bool):
        def run():
            m.root_cause_order = on
            return m.match(log)

        return run

    sides = timing.time_alternating(
        {f"{name}: without order": side(False), f"{name}: with order": side(True)}, values=runs
    )
    m.root_cause_order = True
    without, with_ = sides.values()
    kept += [*without.benchmarks, *with_.benchmarks]
    rep = with_.result
    mb = len(log.encode()) / 2**20
    with_s, without_s = with_.cpu.median(), without.cpu.median()
    reasons: dict[str, int] = {}
    for g in rep.groups:
        kind = next((k for p, k in REASON_KINDS if g.reason.startswith(p)), "other")
        reasons[kind] = reasons.get(kind, 0) + 1
    step = order_step(name, log, m)
    kept.append(step)
    return {
        "order_step_cpu_ms": round(step.median() * 1000, 2),
        # the ordering step alone against the whole match: steadier than the ratio of two
        # whole runs on a shared machine, and the same question
        "order_step_share_of_match": round(step.median() / with_s, 3),
        "log_mb": round(mb, 2),
        "lines": log.count("\n") + 1,
        "groups": len(rep.groups),
        "log_mb_s_cpu_with_order": round(mb / with_s, 2),
        "log_mb_s_cpu_without_order": round(mb / without_s, 2),
        "throughput_ratio": round(without_s / with_s, 3),
        # each value against the one beside it in time, then the median: a neighbour's
        # burst lands on one pair, not on a side
        "throughput_ratio_paired_median": round(
            statistics.median(
                b / a for a, b in zip(with_.cpu.get_values(), without.cpu.get_values(), strict=True)
            ),
            3,
        ),
        # with against without, as pyperf compare_to reports it (ratio above 1: slower)
        "with_vs_without": timing.compare(without.cpu, with_.cpu),
        "meets_bar": without_s / with_s >= BAR,
        "group_reasons": reasons,
    }


def order_step(name: str, log: str, m: Matcher) -> pyperf.Benchmark:
    """CPU time of the ordering step alone (`order_groups` on the groups' inputs that
    matching ``log`` hands it)."""
    seen: list[tuple[str, list]] = []
    real = report.order_groups

    def capture(text: str, items: list) -> list:
        seen.append((text, items))
        return real(text, items)

    report.order_groups = capture
    try:
        m.match(log)
    finally:
        report.order_groups = real
    text, items = seen[-1]
    return timing.time_call(f"{name}: ordering step", lambda: real(text, items)).cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller logs, fewer values")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    specs = load_specs()
    m = Matcher.build(specs, cache_dir=CACHE, with_similarity=True)
    base = make_log(specs, 1 if args.quick else 4)
    logs = {"plain whole log": base, "with chained exceptions": chained_log(specs, base)}
    runs = 3 if args.quick else 15
    load0 = os.getloadavg()
    kept: list[pyperf.Benchmark] = []
    results = {name: measure(name, m, log, runs, kept) for name, log in logs.items()}
    out = {
        "what": "whole-log matching, root-cause ordering on vs off, same matcher, same run; "
        f"median CPU time of {runs} values each, the sides timed in turn "
        "(benchmarks/timing.py)",
        "bar": f"throughput_ratio >= {BAR}",
        "records": len(specs),
        "results": [{"log": k, **v} for k, v in results.items()],
        "machine": f"{platform.machine()}, {os.cpu_count()} cpu",
        "load_average_before_after": [list(load0), list(os.getloadavg())],
    }
    path = args.results / "order.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    raw = timing.dump("order", kept, args.results)
    ratios = ", ".join(f"{name} {r['throughput_ratio']}" for name, r in results.items())
    print(f"throughput ratio, ordered / not: {ratios}; wrote {path} and {raw.name}")


if __name__ == "__main__":
    main()
