"""The learning loop's two bars (issue 12): usage signals cost the paste path nearly
nothing, and each work-queue section answers fast at scale.

1. **Paste path, usage on vs off, in the same run.** ``POST /match/`` (htmx fragment) with
   real labelled pastes (``eval-public.jsonl``) against the full dataset, in-process through
   Django's test Client. The two arms alternate paste by paste, each paste sent once per
   arm (which arm goes first alternates too), so drift on a shared machine falls on both
   alike; each request is one value (``timing.time_each``), and the throughput ratio is
   on/off over the summed times. The flush interval is cut to `BENCH_FLUSH_SECONDS`, so
   the run pays for many flushes, not only for counting (production flushes less often).
   The rate limiter is off in both arms (it would refuse the run), identical otherwise.
   The same again at the production interval, and the two costs measured apart from the
   noise of whole requests (`usage_costs`: one `count_match`, one flush) with the share of
   a paste they come to at that interval. Bar: `RATIO_GOAL`.
2. **Work-queue sections at scale.** 200k records (the real ones plus synthetic published
   records whose pattern is disabled, so the matcher never compiles them), 10^5 gaps, votes,
   proposals and usage rows; each section's first page as the admin page builds it
   (`kb.loop.admin.work_queue_sections`): each section's query timed alone over repeated
   calls, then the whole set. Bar: `SECTION_GOAL_MS` at the 95th percentile, each.

The database is a scratch one: ``DATABASE_URL`` (default
``sqlite:////tmp/bench-loop.sqlite3``); data is added only when missing, so later runs
reuse it. Run: ``.venv/bin/python benchmarks/bench_loop.py [--quick] [--results=DIR]``.
Writes ``benchmarks/results/loop.json`` (or into DIR), with the raw values beside it
(``loop.pyperf.json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import pyperf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"

os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-loop.sqlite3")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
os.environ.setdefault("KB_MATCHER_CACHE_DIR", str(REPO / ".cache" / "matcher-bench"))

import django  # noqa: E402
import timing  # noqa: E402 - beside this file (the script's own folder is on sys.path)

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402
from loop_data import DATA, RECORDS, SYNTHETIC, ensure_loop_rows, ensure_records  # noqa: E402

RATIO_GOAL = 0.95
BENCH_FLUSH_SECONDS = 1
FLUSH_KEYS = 1000  # distinct records one worker hit within one flush interval
FLUSH_ROUNDS = 9
SECTION_GOAL_MS = 100.0
WINDOW_DAYS = 30  # the work queue's "hit in the last N days" window


def pastes() -> list[str]:
    with (DATA / "eval-public.jsonl").open(encoding="utf-8") as fh:
        return [t for t in (json.loads(line).get("text") or "" for line in fh) if t.strip()]


def paste_path(pastes_per_arm: int, flush_seconds: int, kept: list[pyperf.Benchmark]) -> dict:
    """Usage signals on vs off, paste by paste, which arm goes first alternating."""
    from kb.loop import usage

    texts = pastes()
    client = Client(HTTP_HX_REQUEST="true")
    flushes = 0
    original_flush = usage.UsageBuffer.flush

    def counting_flush(self: usage.UsageBuffer, now: Any = None) -> int:
        nonlocal flushes
        flushes += 1
        return original_flush(self, now)

    def send(request: tuple[str, str]) -> None:
        arm, text = request
        # Read at every request: set inside the override below, undone when it ends.
        settings.KB_USAGE_ENABLED = arm == "on"
        response = client.post("/match/", {"text": text})
        assert response.status_code == 200, response.status_code

    plan = [
        (arm, texts[i % len(texts)])
        for i in range(pastes_per_arm)
        for arm in (("on", "off") if i % 2 == 0 else ("off", "on"))
    ]
    usage.UsageBuffer.flush = counting_flush  # count the flushes the "on" arm pays for
    try:
        with override_settings(KB_RATE_LIMIT_PER_MINUTE=0, KB_USAGE_FLUSH_SECONDS=flush_seconds):
            for text in texts[:10]:  # warm: the matcher, templates, the records shown
                client.post("/match/", {"text": text})
            usage.flush()
            flushes = 0
            each = timing.time_each(f"paste path, flush every {flush_seconds} s", send, plan)
            usage.flush()
    finally:
        usage.UsageBuffer.flush = original_flush
    arms = timing.split(each, [arm for arm, _ in plan])
    kept += [b for arm in arms.values() for b in arm.benchmarks]
    rate = {arm: pastes_per_arm / sum(one.wall.get_values()) for arm, one in arms.items()}
    ratio = rate["on"] / rate["off"]
    cpu = {arm: sum(one.cpu.get_values()) for arm, one in arms.items()}
    return {
        "flush_seconds": flush_seconds,
        "requests_per_arm": pastes_per_arm,
        "on_req_per_s": round(rate["on"], 1),
        "off_req_per_s": round(rate["off"], 1),
        "ratio_on_over_off": round(ratio, 4),
        # CPU time of this process: what the other processes on a shared machine do to
        # wall time falls out (the flushes' waits for the disk do too).
        "cpu_ratio_on_over_off": round(cpu["off"] / cpu["on"], 4),
        "on_vs_off_cpu": timing.compare(arms["off"].cpu, arms["on"].cpu),
        "goal_ratio": RATIO_GOAL,
        "meets_goal": ratio >= RATIO_GOAL,
        "flushes_in_on_arm": flushes,
        "distinct_pastes": len(texts),
    }


def usage_costs(off_req_per_s: float, kept: list[pyperf.Benchmark]) -> dict[str, Any]:
    """What usage adds to one paste, measured apart from the noise of whole requests:
    `count_match` per call, and one flush of a buffer of `FLUSH_KEYS` counters; with the
    production flush interval, the share of a paste's time they take together."""
    from types import SimpleNamespace

    from kb.loop import usage

    result = SimpleNamespace(matches=[SimpleNamespace(record=SimpleNamespace(pk="r1"))])
    buffer = usage.buffer
    with override_settings(KB_USAGE_FLUSH_SECONDS=10**9):
        buffer.reset()
        counting = timing.time_call("count_match", lambda: usage.count_match(result))
    buffer.reset()
    rounds = itertools.count()

    def fill() -> None:  # a buffer of FLUSH_KEYS counters, other records each round
        round_ = next(rounds)
        for n in range(FLUSH_KEYS):
            buffer.count({f"{SYNTHETIC}{(n * 7919 + round_) % RECORDS:013d}"})
        buffer.count(set())

    flushing = timing.time_each(
        f"flush of {FLUSH_KEYS} keys", lambda _: buffer.flush(), range(FLUSH_ROUNDS), before=fill
    )
    kept += [*counting.benchmarks, *flushing.benchmarks]
    count_us = counting.wall.median() * 1e6
    flush = flushing.wall.median() * 1e3
    interval = settings.KB_USAGE_FLUSH_SECONDS
    request_ms = 1000 / off_req_per_s
    per_request_ms = count_us / 1000 + flush / (interval * off_req_per_s)
    return {
        "count_match_us": round(count_us, 3),
        "flush_keys": FLUSH_KEYS,
        "flush_ms_median": round(flush, 2),
        "flush_ms_max": round(max(flushing.wall.get_values()) * 1e3, 2),
        "production_flush_seconds": interval,
        "paste_ms_off": round(request_ms, 3),
        "projected_ratio_at_production_interval": round(
            request_ms / (request_ms + per_request_ms), 5
        ),
    }


def section_queries(request: Any) -> dict[str, tuple[Any, int, int]]:
    """Each work-queue section's ``page_of`` arguments, as `work_queue_sections` passes
    them, by title; no section's query runs (each page is left empty)."""
    from kb.loop import admin as queue
    from kb.loop import selectors

    real_page_of = selectors.page_of
    calls: list[tuple[Any, int, int]] = []

    def record(rows: Any, number: int, size: int) -> selectors.Page:
        calls.append((rows, number, size))
        return selectors.Page(rows=[], number=max(1, number), has_next=False)

    selectors.page_of = record
    try:
        built = queue.work_queue_sections(request, WINDOW_DAYS)
    finally:
        selectors.page_of = real_page_of
    return {section["title"]: args for section, args in zip(built, calls, strict=True)}


def sections(tries: int, kept: list[pyperf.Benchmark]) -> list[dict[str, Any]]:
    """Each work-queue section's `page_of` (its query, read to the page's end) as the admin
    page calls it, then the whole set of sections with the records their rows name
    (`work_queue_sections`); ``tries`` values each after a first, cold one."""
    from django.test import RequestFactory

    from kb.loop import admin as queue
    from kb.loop import selectors

    request = RequestFactory().get("/admin/loop/gap/queue/")
    out = []
    for title, args in section_queries(request).items():
        one = timing.time_each(
            title, lambda _, args=args: selectors.page_of(*args), range(tries + 1)
        )
        kept += one.benchmarks
        out.append(_summary(title, one, len(one.result[0].rows)))
    whole = "all sections, with their records (the page's data)"
    one = timing.time_each(
        whole, lambda _: queue.work_queue_sections(request, WINDOW_DAYS), range(tries + 1)
    )
    kept += one.benchmarks
    return [*out, _summary(whole, one, None)]


def _summary(name: str, one: timing.Timing, rows: int | None) -> dict[str, Any]:
    """The first value apart (cold), the rest summarised; a section's goal, not the whole's."""
    cold, *warm = one.wall.get_values()
    warm_ms = timing.summary(timing.from_values(name, warm, "time.perf_counter()"), 1e3, 2)
    each = rows is not None
    return {
        "case": name,
        "rows": rows,
        "n": len(warm),
        "cold_ms": round(cold * 1e3, 2),
        "p50_ms": warm_ms["p50"],
        "p95_ms": warm_ms["p95"],
        "max_ms": warm_ms["max"],
        "goal_ms": SECTION_GOAL_MS if each else None,
        "meets_goal": warm_ms["p95"] < SECTION_GOAL_MS if each else None,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer pastes and tries")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args, _ = parser.parse_known_args(argv)  # run_all.py passes every script its flags
    rng = random.Random(12)
    started = time.perf_counter()
    data = ensure_records()
    kept: list[pyperf.Benchmark] = []
    per_arm = 200 if args.quick else 1500
    paste = paste_path(per_arm, BENCH_FLUSH_SECONDS, kept)
    production = paste_path(per_arm, settings.KB_USAGE_FLUSH_SECONDS, kept)
    costs = usage_costs(paste["off_req_per_s"], kept)
    data |= ensure_loop_rows(rng)
    queue = sections(10 if args.quick else 30, kept)
    result = {
        "meta": {
            "benchmark": "learning loop",
            "when": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cpu",
            "python": platform.python_version(),
            "load_average": list(os.getloadavg()),
            "database": os.environ["DATABASE_URL"].split(":", 1)[0],
            "quick": args.quick,
            "method": "in-process django.test.Client (paste) and direct selector calls, "
            "one value per call (benchmarks/timing.py)",
            "seconds": round(time.perf_counter() - started, 1),
            **data,
        },
        "paste_path": paste,
        "paste_path_production_interval": production,
        "usage_costs": costs,
        "sections": queue,
    }
    out = args.results / "loop.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    raw = timing.dump("loop", kept, args.results)
    sections_ok = all(c["meets_goal"] is not False for c in queue)
    print(
        f"usage on/off: {paste['ratio_on_over_off']} flushing every {BENCH_FLUSH_SECONDS} s, "
        f"{production['ratio_on_over_off']} at the production interval (goal >= {RATIO_GOAL}); "
        f"work-queue sections within {SECTION_GOAL_MS:.0f} ms p95: "
        f"{'yes' if sections_ok else 'no'}; wrote {out} and {raw.name}"
    )
    return 0 if paste["meets_goal"] and production["meets_goal"] and sections_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
