"""The load test's ``locked`` phase (docs/reliability.md#r31-locked-database): SQLite's write
lock held for ``--lock-seconds`` (30 by default) by another process, as a long
``import_records --atomic`` or an open ``sqlite3`` shell holds it, while people paste, read
and write.

- A task worker (``manage.py db_worker``, as the Procfile and the systemd unit run it)
  runs from before the lock; it must still run after it, and then run a task queued once
  the lock is gone.
- The lock holder updates one record inside its transaction and commits at the end: that
  write must be stored afterwards.
- During the lock: the benign paste client (wrk, as in the ``match`` phase), a reader
  (wrk, record pages), a writer (filed reports on ``POST /api/reports``, one after
  another, each with its own text) and ``/healthz`` once a second.
- After it: each write answered 503 is sent again, as a client honouring ``Retry-After``
  would; every write must then be stored (the reports folded into gaps grow by the number
  of writes answered 201), so nothing is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import loop_traffic
from server import PY, ROOT, log
from wrk import wrk, wrk_result

HOLDER = """
import sqlite3, sys, time
path, record, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
c = sqlite3.connect(path, isolation_level=None)
c.execute("BEGIN IMMEDIATE")
c.execute("UPDATE kb_errorrecord SET example_fix = ? WHERE id = ?", ("held-lock-write", record))
print("locked", flush=True)
time.sleep(seconds)
c.execute("COMMIT")
print("released", flush=True)
"""

ENQUEUE = (
    "import django;django.setup();from kb.curation.tasks import warm_matcher;"
    "print(warm_matcher.enqueue().id)"
)
TASK_STATUS = (
    "import sys,django;django.setup();from django_tasks_db.models import DBTaskResult;"
    "print(DBTaskResult.objects.get(pk=sys.argv[1]).status)"
)
STORED_FIX = (
    "import sys,django;django.setup();from kb.records.models import ErrorRecord;"
    "print(ErrorRecord.objects.get(pk=sys.argv[1]).example_fix)"
)


def _python(env: dict[str, str], code: str, *args: str) -> str:
    done = subprocess.run(
        [PY, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise SystemExit(f"locked phase: a helper script failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def _post(url: str, body: dict[str, Any], client: str) -> tuple[int, float, str]:
    """One JSON write: (status, milliseconds, Retry-After)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-Forwarded-For": client},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            status, retry = int(r.status), r.headers.get("Retry-After", "")
    except urllib.error.HTTPError as exc:
        status, retry = exc.code, exc.headers.get("Retry-After", "")
    return status, (time.monotonic() - started) * 1000, retry


def _health(base: str) -> str:
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
            return str(json.loads(r.read())["status"])
    except urllib.error.HTTPError as exc:
        return f"http {exc.code}"
    except OSError:
        return "no answer"


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "p50": round(statistics.median(ordered), 1),
        "p99": round(p99, 1),
        "max": round(ordered[-1], 1),
    }


def _worker(env: dict[str, str], work: Path) -> subprocess.Popen[bytes]:
    with (work / "worker.log").open("wb") as out:
        return subprocess.Popen(
            [PY, "manage.py", "db_worker", "--no-startup-delay", "--interval", "0.5"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def run_locked(
    base: str,
    work: Path,
    env: dict[str, str],
    ids: list[str],
    benign: Path,
    record_paths: list[str],
    token: str,
    lock_seconds: int,
    people: list[str],
) -> dict[str, Any]:
    url = urlparse(env["DATABASE_URL"])
    if url.scheme != "sqlite":
        return {"skipped": "SQLite only: PostgreSQL has no database-wide write lock"}
    db_path = url.path
    record = ids[len(ids) // 2]
    worker = _worker(env, work)
    try:
        time.sleep(3)  # started and polling: the lock must meet a running worker
        if worker.poll() is not None:
            raise SystemExit(f"db_worker exited: {(work / 'worker.log').read_text()[-2000:]}")
        before = loop_traffic.stored(env)
        holder = subprocess.Popen(
            [PY, "-c", HOLDER, db_path, record, str(lock_seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None
        if holder.stdout.readline().strip() != "locked":
            raise SystemExit("the lock holder did not take the write lock")
        locked_at = time.monotonic()
        log(f"locked: write lock held for {lock_seconds} s")
        pastes = wrk(
            base, work, "locked-pastes", "POST", ["/match/"], benign, token, lock_seconds, 4, people
        )
        reads = wrk(
            base, work, "locked-reads", "GET", record_paths, None, token, lock_seconds, 2, people
        )
        writes: list[tuple[int, float, str, dict[str, Any]]] = []
        health: list[str] = []

        def writer() -> None:
            n = 0
            while time.monotonic() - locked_at < lock_seconds - 1:
                body = loop_traffic.report(10_000 + n, dry_run=False)
                status, ms, retry = _post(base + "/api/reports", body, people[n % len(people)])
                writes.append((status, ms, retry, body))
                n += 1

        def prober() -> None:
            while time.monotonic() - locked_at < lock_seconds - 1:
                health.append(_health(base))
                time.sleep(1)

        threads = [threading.Thread(target=writer), threading.Thread(target=prober)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        pastes_result = wrk_result(work, "locked-pastes", pastes)
        reads_result = wrk_result(work, "locked-reads", reads)
        if holder.stdout.readline().strip() != "released":
            raise SystemExit("the lock holder did not commit")
        holder.wait(timeout=30)
        log("locked: released")
        worker_alive = worker.poll() is None
        health_after = _health(base)

        # Clients send the refused writes again after the lock, as Retry-After asks.
        refused = [body for status, _ms, _retry, body in writes if status == 503]
        retried = [_post(base + "/api/reports", body, people[0])[0] for body in refused]
        accepted = sum(1 for status, *_ in writes if status == 201) + retried.count(201)
        after = loop_traffic.stored(env)

        task = _python(env, ENQUEUE)
        deadline = time.monotonic() + 180
        status = _python(env, TASK_STATUS, task)
        while status not in ("SUCCESSFUL", "FAILED") and time.monotonic() < deadline:
            time.sleep(1)
            status = _python(env, TASK_STATUS, task)
        worker_log = (work / "worker.log").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(timeout=30)
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    statuses: dict[str, int] = {}
    for s, *_ in writes:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    paused = [ms for s, ms, _r, _b in writes if s == 503]
    return {
        "lock_seconds": lock_seconds,
        # What a write waits for the lock before its 503 (kb/settings.py's default).
        "web_busy_timeout_s": int(env.get("SQLITE_BUSY_TIMEOUT") or 5),
        "pastes": pastes_result,
        "reads": reads_result,
        "writes": {
            "sent": len(writes),
            "statuses": statuses,
            "latency_ms_503": _percentiles(paused),
            "retry_after": sorted({r for s, _ms, r, _b in writes if s == 503}),
            "resent_after_lock": len(refused),
            "resent_statuses": sorted(set(retried)),
            "accepted_in_all": accepted,
            "reports_stored": after["gap_reports"] - before["gap_reports"],
        },
        "healthz_during": {k: health.count(k) for k in sorted(set(health))},
        "healthz_after": health_after,
        "holder_write_stored": _python(env, STORED_FIX, record) == "held-lock-write",
        "worker": {
            "alive_after_lock": worker_alive,
            "lock_retries_logged": worker_log.count("task worker polls again"),
            "task_queued_after_lock": status,
        },
    }


def locked_goal(p: dict[str, Any]) -> bool:
    """r31: the worker survives and works after; pastes and reads answer without error;
    every write during the lock is a 503 with Retry-After, none later than the web's busy
    timeout (the first write a process sees refused waits it out) and the median under
    half a second (the rest wait only ``PAUSED_LOCK_WAIT_MS``); /healthz says degraded
    during and ok after; nothing is lost."""
    w = p["writes"]
    latency = w["latency_ms_503"]
    return (
        p["worker"]["alive_after_lock"]
        and p["worker"]["task_queued_after_lock"] == "SUCCESSFUL"
        and p["pastes"]["errors"] == 0
        and p["reads"]["errors"] == 0
        and w["sent"] > 0
        and set(w["statuses"]) <= {"503", "201"}
        and w["retry_after"] != [""]
        and latency.get("p50", 0) < 500
        and latency.get("max", 0) < p["web_busy_timeout_s"] * 1000 + 1000
        and set(w["resent_statuses"]) <= {201}
        and w["reports_stored"] == w["accepted_in_all"] == w["sent"]
        and p["healthz_during"].get("degraded", 0) > 0
        and p["healthz_after"] == "ok"
        and p["holder_write_stored"]
    )
