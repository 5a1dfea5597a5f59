"""Benchmark of the compiled matcher store: a fresh host's start, and workers' memory.

Two questions from docs/deployment.md ("Compiled matcher store"):

1. How soon does a new host serve, with an empty local matcher cache, when another host
   has already compiled and published the matcher? Host A runs ``manage.py warm_matcher``
   (compiling on the first run of this benchmark, from its own cache after); then a
   gunicorn with an empty ``KB_MATCHER_CACHE_DIR`` is started, and the time from spawning
   it to its first answered ``POST /api/match`` is taken, with a check that its log says
   "matcher loaded from store" and that it compiled nothing. A second start of the same
   host (its local cache now warm) is the baseline beside it.
2. How much memory do one and two workers use? gunicorn with 1 and with 2 workers,
   preloading the matcher in the arbiter (the default) and without (``GUNICORN_PRELOAD=0``),
   each after some matches on every worker: proportional set size (PSS, shared pages split
   between the processes sharing them) and unique set size (USS) of the arbiter plus its
   workers, from ``/proc/<pid>/smaps_rollup``. Goal: two workers at most 1.3 times one.

Records: the real dataset's patterns plus synthetic mutants (``matcher_data.synthesise``)
up to ``--records`` (default 100k), written straight to a scratch database (``DATABASE_URL``,
default an SQLite file under ``.cache/bench-store``; PostgreSQL works the same), so the
figures are the matcher's, not the importer's. Run with ``--records 1000000`` on PostgreSQL
for the 10^6 goal (the first run compiles for a long time; later runs reuse host A's cache).

Run: ``.venv/bin/python benchmarks/bench_store.py [--records N] [--quick]``
Writes benchmarks/results/store.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRATCH = REPO / ".cache" / "bench-store"
SCRATCH.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("DATABASE_URL", f"sqlite:///{SCRATCH / 'kb.sqlite3'}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from matcher_data import load_specs, make_lines, synthesise  # noqa: E402
from rebuild_goal import IMPORT_SHARE, REBUILD_GOAL  # noqa: E402

from tests.servers import Gunicorn, static_root  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "store.json"
# Host A is this process: the servers share its SECRET_KEY, as the hosts of a deployment
# do, or they could not check the MAC of what it stored (kb/matching/store.py).
LOGS = {
    "GUNICORN_CMD_ARGS": "--capture-output",
    "KB_RATE_LIMIT_PER_MINUTE": "0",
    "SECRET_KEY": settings.SECRET_KEY,
}


def ensure_records(n: int) -> int:
    """The real patterns plus synthetic ones up to ``n`` records (once per database)."""
    from kb.records.models import ErrorRecord

    call_command("migrate", verbosity=0, interactive=False)
    call_command("createcachetable", verbosity=0)
    have = ErrorRecord.objects.count()
    if have == n:
        return have
    ErrorRecord.objects.all().delete()
    real = load_specs()
    specs = (real + synthesise(real, max(0, n - len(real))))[:n]
    batch = []
    for i, s in enumerate(specs):
        batch.append(
            ErrorRecord(
                id=f"st{i:014d}",
                repo=f"bench/repo-{i % 500}",
                slug=f"bench-{i}",
                file_path=f"src/module_{i % 2000}.py",
                line_number=i % 900 + 1,
                source_code_start=1,
                source_code_end=2,
                error_message=s.message,
                message_pattern=s.pattern,
                error_type="error_code",
                severity="error",
                solutions=["Restart the stage"],
            )
        )
        if len(batch) == 5000:
            ErrorRecord.objects.bulk_create(batch)
            batch = []
    ErrorRecord.objects.bulk_create(batch)
    return ErrorRecord.objects.count()


def warm_host_a() -> dict[str, object]:
    """Host A: compile (first run) or load, and publish to the store."""
    from io import StringIO

    from django.test import override_settings

    from kb.matching.holder import holder

    out = StringIO()
    t0 = time.perf_counter()
    with override_settings(KB_MATCHER_CACHE_DIR=SCRATCH / "host-a"):
        holder.reset()
        call_command("warm_matcher", stdout=out)
        holder.reset()  # this process's copy is not measured
    return {"host_a_warm_s": round(time.perf_counter() - t0, 2), "host_a": out.getvalue().strip()}


def _match(server: Gunicorn, line: str) -> tuple[int, bytes]:
    body = json.dumps({"text": line}).encode()
    headers = {"Content-Type": "application/json"}
    status, _h, answer = server.request("POST", "/api/match", body, headers, timeout=60)
    return status, answer


def first_match(cache_dir: Path, line: str, workers: int = 1) -> dict[str, object]:
    """Spawn a gunicorn on ``cache_dir``; seconds until its first answered match."""
    t0 = time.perf_counter()
    with Gunicorn(workers=workers, KB_MATCHER_CACHE_DIR=str(cache_dir), **LOGS) as server:
        status, body = _match(server, line)
        elapsed = time.perf_counter() - t0
        log = server.errors()
    matched = status == 200 and bool(json.loads(body)["matches"])
    # The holder's own figure: the fetch and load alone, without the process start.
    loaded = re.search(r"matcher loaded from store: \S+ \(\d+ patterns, ([\d.]+) s\)", log)
    return {
        "first_match_s": round(elapsed, 2),
        "store_fetch_and_load_s": float(loaded.group(1)) if loaded else None,
        "matched": matched,
        "loaded_from_store": "matcher loaded from store" in log,
        "compiled": "matcher published to store" in log,
    }


def _kb(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for row in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = row.split(":", 1)
        fields[key] = int(value.split()[0])
    return fields


def _family(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *map(int, children)]


def memory(cache_dir: Path, workers: int, preload: bool, lines: list[str]) -> dict[str, object]:
    """PSS and USS (MiB) of the arbiter and its workers after matches on each worker."""
    env = {**LOGS, "GUNICORN_PRELOAD": "1" if preload else "0"}
    with Gunicorn(workers=workers, KB_MATCHER_CACHE_DIR=str(cache_dir), **env) as server:
        for line in lines * workers:  # sync workers: consecutive requests spread over them
            _match(server, line)
        assert server.proc is not None
        pids = _family(server.proc.pid)
        per = [_kb(p) for p in pids]
        served = len(set(server.worker_pids()))
    pss = sum(f["Pss"] for f in per) / 1024
    uss = sum(f.get("Private_Clean", 0) + f.get("Private_Dirty", 0) for f in per) / 1024
    return {
        "workers": workers,
        "preload": preload,
        "processes": len(pids),
        "workers_that_served": served,
        "pss_mib": round(pss, 1),
        "uss_mib": round(uss, 1),
        "rss_mib": round(sum(f["Rss"] for f in per) / 1024, 1),
    }


def rebuild(n: int) -> dict[str, object]:
    """A full build of ``n`` records' patterns on every core, from an empty cache, then the
    build after an import of 1% new records (the newest last, as the holder orders them),
    from that cache; as the holder builds (with the similarity index). The shards each
    compiled are counted, and the rebuild's time is given over the full build's."""
    import resource

    from kb.engine import Matcher, PatternSpec

    real = load_specs()
    extra = max(1, round(n * IMPORT_SHARE))
    every = (real + synthesise(real, max(0, n + extra - len(real))))[: n + extra]
    # the imported records made later than the others, as the holder tells them apart
    every[n:] = [PatternSpec(s.key, s.pattern, s.message, batch=1) for s in every[n:]]
    before, after = every[:n], every
    row: dict[str, object] = {"records": n, "imported": extra}
    with tempfile.TemporaryDirectory(prefix="kb-rebuild-") as tmp:
        for name, specs in (("full", before), ("after_import", after)):
            print(f"rebuild: {name} build of {len(specs):,} records ...", flush=True)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            m = Matcher.build(specs, cache_dir=Path(tmp))
            wall = time.perf_counter() - t0
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
            row[name] = {
                "seconds": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "compile_s": m.stats["compile_s"],
                "shards": m.stats["shards"],
                "shards_compiled": m.stats["shards_compiled"],
                "patterns": m.stats["patterns"],
                "patterns_compiled": m.stats["patterns_compiled"],
                "shard_target": m.stats["shard_target"],
            }
            del m
    full, again = row["full"], row["after_import"]
    row["ratio"] = round(again["seconds"] / full["seconds"], 3)  # type: ignore[index]
    row["met"] = row["ratio"] <= REBUILD_GOAL  # type: ignore[operator]
    print(f"rebuild at {n:,}: full {full['seconds']} s, after a 1% import {again['seconds']} s "  # type: ignore[index]
          f"({again['shards_compiled']} of {again['shards']} shards compiled)", flush=True)  # type: ignore[index]  # fmt: skip
    return row


TRADE_ROUNDS = 3  # each layout measured this many times, in turns; the best kept
TRADE_LINES = 2000
TRADE_PASTES = 40


def _cpu_ns(m: object, text: str) -> int:
    t0 = time.process_time_ns()
    m.match(text)  # type: ignore[attr-defined]
    return time.process_time_ns() - t0


def shard_tradeoff() -> dict[str, object]:
    """What more shards cost a paste: the dataset's patterns in one shard (what the
    layout gave them before shards were cut by content) and in the layout's shards, each
    matching the same lines and the same 8 KiB paste (``bench_pages``'), input by input
    in turns (so a neighbour's burst on this shared machine lands on both alike): the
    median CPU time per line and per paste, over ``TRADE_ROUNDS`` passes."""
    import statistics

    import bench_pages

    from kb.engine import Matcher

    specs = load_specs()
    lines = make_lines(specs, TRADE_LINES)
    paste = bench_pages.paste_text()
    with tempfile.TemporaryDirectory(prefix="kb-tradeoff-") as tmp:
        layouts = {
            "one shard": Matcher.build(specs, cache_dir=Path(tmp), shard_size=2**30),
            "layout": Matcher.build(specs, cache_dir=Path(tmp)),
        }
    per_line: dict[str, list[int]] = {name: [] for name in layouts}
    per_paste: dict[str, list[int]] = {name: [] for name in layouts}
    for m in layouts.values():
        for line in lines[:100]:
            m.match(line)
    for _round in range(TRADE_ROUNDS):
        for line in lines:
            for name, m in layouts.items():
                per_line[name].append(_cpu_ns(m, line))
        for _ in range(TRADE_PASTES):
            for name, m in layouts.items():
                per_paste[name].append(_cpu_ns(m, paste))
    rows = [
        {
            "layout": name,
            "shards": m.stats["shards"],
            "line_cpu_p50_us": round(statistics.median(per_line[name]) / 1e3, 1),
            "paste_8kib_cpu_p50_ms": round(statistics.median(per_paste[name]) / 1e6, 3),
        }
        for name, m in layouts.items()
    ]
    one, cut = rows
    return {
        "patterns": layouts["layout"].stats["patterns"],
        "rounds": TRADE_ROUNDS,
        "rows": rows,
        "line_ratio": round(cut["line_cpu_p50_us"] / one["line_cpu_p50_us"], 3),
        "paste_ratio": round(cut["paste_8kib_cpu_p50_ms"] / one["paste_8kib_cpu_p50_ms"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--quick", action="store_true", help="16.7k records (the real set)")
    ap.add_argument("--out", type=Path, default=OUT, help="result file (default: store.json)")
    ap.add_argument(
        "--rebuild-only", nargs="*", type=int, metavar="N",
        help="only the rebuild after a 1%% import, at these sizes (default: 16,720 and "
        "--records), written into the result file beside its other figures",
    )  # fmt: skip
    ap.add_argument(
        "--tradeoff-only", action="store_true",
        help="only the paste's cost of the layout's shards against one shard",
    )  # fmt: skip
    args = ap.parse_args()
    if args.tradeoff_only:
        old = json.loads(args.out.read_text())
        old["rebuild"]["paste"] = shard_tradeoff()
        args.out.write_text(json.dumps(old, indent=2) + "\n")
        print(json.dumps(old["rebuild"]["paste"]))
        return
    if args.rebuild_only is not None:
        sizes = args.rebuild_only or [16_720, args.records]
        old = json.loads(args.out.read_text()) if args.out.is_file() else {}
        old["rebuild"] = {
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": {"cpus": os.cpu_count(), "loadavg_at_start": list(os.getloadavg())},
            "goal_ratio": REBUILD_GOAL,
            "sizes": [rebuild(n) for n in sizes],
            "paste": shard_tradeoff(),
        }
        args.out.write_text(json.dumps(old, indent=2) + "\n")
        print(f"wrote {args.out}")
        return
    n = 16_720 if args.quick else args.records
    res: dict[str, object] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "loadavg_at_start": list(os.getloadavg())},
        "records": ensure_records(n),
    }
    res["database"] = os.environ["DATABASE_URL"].split(":", 1)[0]
    static_root()  # collected once, before any start is timed
    res.update(warm_host_a())
    real = load_specs()
    lines = make_lines(real, 20)
    fresh = Path(tempfile.mkdtemp(prefix="kb-fresh-host-"))
    try:
        res["fresh_host"] = fresh_host = first_match(fresh, lines[0])
        res["warm_local_cache"] = first_match(fresh, lines[0])  # same host, second start
        res["memory"] = [
            memory(fresh, w, preload, lines) for preload in (True, False) for w in (1, 2)
        ]
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    by = {(m["preload"], m["workers"]): m for m in res["memory"]}  # type: ignore[index]
    for preload in (True, False):
        one, two = by[(preload, 1)], by[(preload, 2)]
        key = "two_over_one_pss" + ("" if preload else "_without_preload")
        res[key] = round(two["pss_mib"] / one["pss_mib"], 2)
    res["rebuild"] = {
        "when": res["when"],
        "machine": res["machine"],
        "goal_ratio": REBUILD_GOAL,
        "sizes": [rebuild(n) for n in sorted({16_720, n})],
        "paste": shard_tradeoff(),
    }
    res["goals"] = {
        "fresh_host_first_match_s": "< 5 s at 100k records, loaded from store, no compile",
        "two_over_one_pss": "<= 1.3 (at 10^6 records)",
    }
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(
        f"fresh host: first match after {fresh_host['first_match_s']} s, loaded from the store: "
        f"{fresh_host['loaded_from_store']}; two workers' PSS over one: {res['two_over_one_pss']}; "
        f"wrote {args.out}"
    )


if __name__ == "__main__":
    main()
