"""Load test on loopback: gunicorn with 2 workers, wrk as the client.

It measures the bars docs/reliability.md#r20-concurrency, #r24-throughput,
#r25-noisy-neighbour and #r31-locked-database.

Starts a scratch copy of the app (its own SQLite file, or ``--database-url``: a scratch
PostgreSQL database), imports every record of the full dataset when
``KB_DATASET_DIR`` holds it (else, or with ``--demo``, the demo records of ``fixtures/``),
collects static files, warms the matcher, and serves it with
``gunicorn -c python:kb.gunicorn_conf`` as deployed behind a reverse proxy: DEBUG off,
2 workers, ``KB_TRUSTED_PROXY_COUNT=1``, and the rate limiter at its production default
(600 matches per client per minute). Each request carries the
``X-Forwarded-For`` address the proxy would add: the benign traffic is many people (256
addresses, about 70 matches each a minute at 300 req/s: never limited), a hostile client is
one address unless said otherwise. Then, each phase for ``--duration`` seconds (60 by
default):

1. ``match``: ``POST /match/`` (htmx partial) with 8 KiB pastes that contain known errors;
2. ``record``: ``GET /records/<id>/`` over many records;
3. ``list``: ``GET /records/`` and ``/tags/`` pages;
4. ``match+adversarial``: phase 1 again while a second client sends hostile pastes
   (just-under-limit size, 20k spaces, ``.*=.*``-bait, ``(a+)+$``-bait, deep nesting) as
   fast as the server answers: it has its budget matched (600 a minute, a paste counting
   once per started 32 KiB), then 429s;
5. ``match+distributed-adversary``: the same hostile pastes from 256 addresses, so that
   no limit ever refuses them: what their cost alone does to the benign traffic;
6. ``writers``: 8 curator-edit streams (separate processes, ``save_curated``) for 30 s
   while phase 1's client runs; every write must be present afterwards.
7. ``match+loop``: phase 1 again while a second client sends the learning loop's
   traffic (``loop_traffic.py``): reports with and without ``dry_run``, proposals and
   votes, from the same 256 addresses; every one must answer 2xx (a 429 counts apart and
   fails the goal: the addresses keep each client far under the limit), and the reports,
   proposals and votes must be stored afterwards.
8. ``locked`` (SQLite only): SQLite's write lock held for ``--lock-seconds`` (30) by
   another process while pastes, page reads, writes and ``/healthz`` go on and a task
   worker runs (``locked.py``): the worker survives and runs a task afterwards, pastes
   and reads answer, writes answer 503 with ``Retry-After`` quickly, ``/healthz`` says
   degraded, and once the lock is gone every write is stored
   (docs/reliability.md#r31-locked-database).

The match requests are ``multipart/form-data`` as the browser posts the paste form.
Results go to ``benchmarks/results/load.json`` (``load-postgresql.json`` on PostgreSQL);
everything started is stopped at the end.
Needs ``wrk`` (``apt-get install -y wrk``). Loopback only; bounded in time.

Helpers, beside this file: ``pastes.py`` (pastes and request bodies), ``wrk.py`` (the
client), ``server.py`` (scratch app, gunicorn, CPU accounting), ``report.py`` (requests per
phase and the goals), ``loop_traffic.py`` (the learning loop's requests), ``locked.py``
(the locked-database phase).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # the helpers beside this file, however it is started
    sys.path.insert(0, HERE)

import loop_traffic  # noqa: E402
from locked import run_locked  # noqa: E402
from pastes import (  # noqa: E402
    CONTENT_TYPE,
    PASTE_BYTES,
    adversarial_pastes,
    benign_pastes,
    records,
    write_bodies,
)
from report import goals, phase_requests  # noqa: E402
from server import (  # noqa: E402
    PY,
    ROOT,
    cpu_seconds,
    csrf_token,
    free_port,
    get_status,
    log,
    post_body,
    prepare,
    scratch_env,
    start_server,
    stop_server,
)
from wrk import wrk, wrk_result  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "load.json"
# X-Forwarded-For addresses (documentation ranges): the benign traffic is many people, the
# adversary one client, or a botnet of 256 that no per-client limit stops.
PEOPLE = [f"192.0.2.{k}" for k in range(1, 255)] + ["198.18.0.1", "198.18.0.2"]
ADVERSARY = ["203.0.113.66"]
BOTNET = [f"198.51.100.{k}" for k in range(1, 255)] + ["198.18.1.1", "198.18.1.2"]
DEMO = ROOT / "fixtures" / "demo-records.jsonl"
# The full dataset's directory, as the tests find it (tests/datasets.py).
DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or ROOT.parent / "shared" / "data")
FULL = DATASET_DIR / "records-all.jsonl"

WRITER = """
import json, sys, time, django
django.setup()
from kb.records.models import ErrorRecord
from kb.records.services import save_curated
ids, name, seconds = sys.argv[1].split(","), sys.argv[2], float(sys.argv[3])
last, writes, errors, slowest = {}, 0, [], 0.0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    for pk in ids:
        started = time.monotonic()
        try:
            record = ErrorRecord.objects.get(pk=pk)
            value = f"{name}-{writes}"
            record.example_fix = value
            save_curated(record, changed_attrs=["example_fix"], reason="load benchmark")
            last[pk] = value
            writes += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.02)
print(json.dumps({"last": last, "writes": writes, "errors": errors[:5],
                  "n_errors": len(errors), "slowest_ms": round(slowest * 1000, 1)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=60, help="seconds per phase")
    parser.add_argument("--writers-duration", type=int, default=30)
    parser.add_argument(
        "--full", action="store_true", help="fail unless the full dataset (KB_DATASET_DIR) is there"
    )
    parser.add_argument("--demo", action="store_true", help="the demo records, not the full set")
    parser.add_argument("--database-url", help="use this (scratch!) database instead of SQLite")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--phases",
        default=(
            "match,record,list,match+adversarial,match+distributed-adversary,writers,match+loop,"
            "locked"
        ),
    )
    parser.add_argument(
        "--lock-seconds", type=int, default=30, help="how long the locked phase holds the lock"
    )
    parser.add_argument(
        "--output", type=Path, help="default: load.json, load-postgresql.json on PostgreSQL"
    )
    args = parser.parse_args()
    on_pg = (args.database_url or "").startswith("postgres")
    if args.output is None:
        args.output = RESULTS.with_name("load-postgresql.json") if on_pg else RESULTS
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    loadavg_start = list(os.getloadavg())
    work = Path(tempfile.mkdtemp(prefix="kb-load-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = scratch_env(work, port, args.workers, args.database_url)
    if args.full and not FULL.exists():
        raise SystemExit(f"--full: {FULL} is missing (set KB_DATASET_DIR)")
    dataset = FULL if FULL.exists() and not args.demo else DEMO
    log(f"scratch {work}; dataset {dataset.name}")
    try:
        import_seconds = prepare(env, dataset)
        recs = records(dataset)
        ids = [r["id"] for r in recs]
        with (work / "error.log").open("w") as error_log:
            server = start_server(env, work, base, error_log)
            try:
                results = run_phases(args, base, work, env, recs, server.pid)
            finally:
                stop_server(server)
        server_log = (work / "error.log").read_text()
        access_log = work / "access.log"
        access = access_log.read_text().splitlines() if access_log.exists() else []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_at_start": loadavg_start,
            "python": platform.python_version(),
            "loadavg_at_end": list(os.getloadavg()),
        },
        "setup": {
            "dataset": dataset.name,
            "records": len(ids),
            "import_seconds": round(import_seconds, 1),
            "database": "postgresql" if on_pg else "sqlite",
            "workers": args.workers,
            "duration_s": args.duration,
            "paste_bytes": PASTE_BYTES,
            "client": "wrk -t1 -c4 (benign), -c1 (adversarial)",
            "clients": "benign: 256 X-Forwarded-For addresses; adversary: 1 (or 256)",
            "rate_limit_per_client_per_minute": int(env.get("KB_RATE_LIMIT_PER_MINUTE", "600")),
        },
        "phases": results,
        "server": {
            "worker_timeouts": server_log.count("WORKER TIMEOUT"),
            "tracebacks": server_log.count("Traceback"),
            "database_locked": server_log.count("database is locked"),
            # 503 is the locked phase's answer to a write (counted there): apart.
            "responses_5xx": sum(1 for line in access if '" 5' in line and '" 503' not in line),
            "responses_503": sum(1 for line in access if '" 503' in line),
            "requests_logged": len(access),
        },
    }
    report["goals"] = goals(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    failed = [name for name, ok in report["goals"].items() if not ok]
    log(f"goals failed: {'; '.join(failed) or 'none'}; wrote {args.output}")
    return 1 if failed else 0


def run_phases(
    args: Any,
    base: str,
    work: Path,
    env: dict[str, str],
    recs: list[dict[str, Any]],
    server_pid: int,
) -> dict[str, Any]:
    """Warm up, check the request bodies, then each phase in ``args.phases`` in turn."""
    ids = [r["id"] for r in recs]
    tags = sorted({t for r in recs for t in (r.get("tags") or [])})[:50]
    token = csrf_token(base)
    max_paste = int(env.get("KB_MAX_PASTE_BYTES", 256 * 1024))
    benign = write_bodies(work / "benign", benign_pastes(recs), token)
    hostile = write_bodies(work / "hostile", adversarial_pastes(max_paste), token)
    record_paths = [f"/records/{urllib.parse.quote(i)}/" for i in ids[:400]]
    list_paths = ["/records/", "/records/?page=2", "/tags/"] + [
        f"/tags/{urllib.parse.quote(t)}/" for t in tags[:20]
    ]
    warm_up = {p: get_status(base + p) for p in ["/", "/records/", "/tags/", record_paths[0]]}
    log(f"warm-up statuses: {warm_up}")
    check_bodies(base, benign, hostile, token)

    results: dict[str, Any] = {}
    d = args.duration
    for phase in args.phases.split(","):
        cpu0, t0 = cpu_seconds(server_pid), time.monotonic()
        if phase == "match":
            p = wrk(base, work, phase, "POST", ["/match/"], benign, token, d, 4, PEOPLE)
            results[phase] = wrk_result(work, phase, p)
        elif phase == "record":
            p = wrk(base, work, phase, "GET", record_paths, None, token, d, 4, PEOPLE)
            results[phase] = wrk_result(work, phase, p)
        elif phase == "list":
            p = wrk(base, work, phase, "GET", list_paths, None, token, d, 4, PEOPLE)
            results[phase] = wrk_result(work, phase, p)
        elif phase in ("match+adversarial", "match+distributed-adversary"):
            who = ADVERSARY if phase == "match+adversarial" else BOTNET
            p1 = wrk(base, work, "benign", "POST", ["/match/"], benign, token, d, 4, PEOPLE)
            p2 = wrk(base, work, "hostile", "POST", ["/match/"], hostile, token, d, 1, who)
            results[phase] = {
                "benign": wrk_result(work, "benign", p1),
                "adversarial": wrk_result(work, "hostile", p2),
            }
        elif phase == "writers":
            results[phase] = run_writers(base, work, env, ids, benign, token, args)
        elif phase == "match+loop":
            results[phase] = run_loop(base, work, env, ids, benign, token, d)
        elif phase == "locked":
            results[phase] = run_locked(
                base, work, env, ids, benign, record_paths, token, args.lock_seconds, PEOPLE
            )
        wall = time.monotonic() - t0
        cpu = cpu_seconds(server_pid) - cpu0
        entry = results.setdefault(phase, {})
        entry["server_cpu_percent"] = round(100 * cpu / wall, 1)
        served = phase_requests(entry)
        if served:
            # CPU the server spent per request: independent of what else runs on the
            # machine, so it tells the capacity of 2 idle cores even on a busy one.
            entry["server_cpu_ms_per_request"] = round(1000 * cpu / served, 2)
            entry["projected_rps_on_idle_cores"] = round(
                min(args.workers, os.cpu_count() or 1) * served / cpu, 1
            )
        log(f"{phase}: done")
    return results


def check_bodies(base: str, benign: Path, hostile: Path, token: str) -> None:
    """Each body once, as wrk will send it: benign pastes must find known errors (a 200
    that parsed no ``text`` would show only the empty-paste hint), hostile ones get 200."""
    found, statuses = 0, []
    bodies = sorted(benign.glob("*.body")) + sorted(hostile.glob("*.body"))
    for n, path in enumerate(bodies):  # each from a client of its own: no one's budget
        status, page = post_body(
            base + "/match/", path.read_bytes(), CONTENT_TYPE, token, f"198.18.9.{n + 1}"
        )
        statuses.append(status)
        if path.parent == benign and status == 200 and "match-card" in page:
            found += 1
    n_benign = len(list(benign.glob("*.body")))
    log(f"body check: statuses {sorted(set(statuses))}, {found}/{n_benign} benign with results")
    if any(s != 200 for s in statuses) or found < n_benign:
        raise SystemExit("the match request bodies do not work against this server")


def run_loop(
    base: str, work: Path, env: dict[str, str], ids: list[str], benign: Path, token: str, d: int
) -> dict[str, Any]:
    """The benign match client with the learning loop's client beside it (issue 12)."""
    reqs = loop_traffic.requests(ids)
    statuses = loop_traffic.check(base, reqs, post_body)
    log(f"loop body check: statuses {statuses}")
    if any(not 200 <= s < 300 for s in statuses):
        raise SystemExit("the learning loop's request bodies do not work against this server")
    paths, bodies = loop_traffic.write(work / "loop", reqs)
    before = loop_traffic.stored(env)
    p1 = wrk(base, work, "loop-match", "POST", ["/match/"], benign, token, d, 4, PEOPLE)
    p2 = wrk(base, work, "loop", "POST", paths, bodies, token, d, 2, PEOPLE, loop_traffic.JSON)
    match, loop = wrk_result(work, "loop-match", p1), wrk_result(work, "loop", p2)
    after = loop_traffic.stored(env)
    return {
        "benign": match,
        "loop": loop,
        "loop_mix": "1/4 each: report dry_run, report filed, proposal, vote",
        "stored_during_phase": {k: after[k] - before[k] for k in after},
    }


def run_writers(
    base: str, work: Path, env: dict[str, str], ids: list[str], benign: Path, token: str, args: Any
) -> dict[str, Any]:
    """8 curator edit streams in 4 processes while the match client runs (r20-concurrency)."""
    targets = ids[-8:]
    procs = [
        subprocess.Popen(
            [
                PY,
                "-c",
                WRITER,
                ",".join(targets[k * 2 : k * 2 + 2]),
                f"w{k}",
                str(args.writers_duration),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    p = wrk(
        base,
        work,
        "writers-match",
        "POST",
        ["/match/"],
        benign,
        token,
        args.writers_duration,
        4,
        PEOPLE,
    )
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=args.writers_duration + 300)
        if proc.returncode != 0:
            outs.append({"writes": 0, "n_errors": 1, "errors": [err[-500:]], "last": {}})
        else:
            outs.append(json.loads(out.strip().splitlines()[-1]))
    match = wrk_result(work, "writers-match", p)
    expected = {pk: v for o in outs for pk, v in o["last"].items()}
    check = (
        "import json,sys,django;django.setup();from kb.records.models import ErrorRecord;"
        "ids=json.loads(sys.argv[1]);"
        "print(json.dumps(dict(ErrorRecord.objects.filter(pk__in=ids)"
        ".values_list('pk','example_fix'))))"
    )
    stored = json.loads(
        subprocess.run(
            [PY, "-c", check, json.dumps(list(expected))],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    return {
        "writer_streams": 8,
        "writer_processes": len(procs),
        "writes": sum(o["writes"] for o in outs),
        "write_errors": sum(o["n_errors"] for o in outs),
        "error_samples": [e for o in outs for e in o["errors"]][:5],
        "slowest_write_ms": max((o.get("slowest_ms", 0) for o in outs), default=0),
        "all_writes_present": stored == expected,
        "match_during_writes": match,
    }


if __name__ == "__main__":
    sys.exit(main())
