"""Load test on loopback: gunicorn with 2 workers, wrk as the client (RELIABILITY #20, #24, #25).

Starts a scratch copy of the app (its own SQLite file, or ``--database-url``), imports the
demo records (or ``--full``: the 16.7k dataset), collects static files, warms the matcher,
and serves it with ``gunicorn -c python:kb.gunicorn_conf`` (DEBUG off, 2 workers, rate
limiter on with a limit high enough not to refuse the benchmark: its cost is measured).
Then, each phase for ``--duration`` seconds (60 by default):

1. ``match``: ``POST /match/`` (htmx partial) with 8 KiB pastes that contain known errors;
2. ``record``: ``GET /records/<id>/`` over many records;
3. ``list``: ``GET /records/`` and ``/tags/`` pages;
4. ``match+adversarial``: phase 1 again while a second client sends hostile pastes
   (just-under-limit size, 20k spaces, ``.*=.*``-bait, ``(a+)+$``-bait, deep nesting);
5. ``writers``: 8 curator-edit streams (separate processes, ``save_curated``) for 30 s
   while phase 1's client runs; every write must be present afterwards.

Results go to ``benchmarks/results/load.json``; everything started is stopped at the end.
Needs ``wrk`` (``apt-get install -y wrk``). Loopback only; bounded in time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
RESULTS = ROOT / "benchmarks" / "results" / "load.json"
DEMO = ROOT / "fixtures" / "demo-records.jsonl"
FULL = ROOT.parent / "shared" / "data" / "records-all.jsonl"
PASTE_BYTES = 8 * 1024

WRK_LUA = r"""
local bodies, paths, method = {}, {}, "GET"
local i = 0
local headers = {}
function init(args)
  method = args[1]
  local f = io.open(args[2], "r")
  for line in f:lines() do table.insert(paths, line) end
  f:close()
  if method == "POST" then
    local n = 0
    while true do
      local bf = io.open(args[3] .. "/" .. n .. ".body", "rb")
      if not bf then break end
      table.insert(bodies, bf:read("*a"))
      bf:close()
      n = n + 1
    end
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    headers["X-CSRFToken"] = args[4]
    headers["Cookie"] = "csrftoken=" .. args[4]
    headers["HX-Request"] = "true"
  end
end
function request()
  i = i + 1
  local path = paths[(i % #paths) + 1]
  if method == "POST" then
    return wrk.format("POST", path, headers, bodies[(i % #bodies) + 1])
  end
  return wrk.format("GET", path, headers)
end
function done(summary, latency, requests)
  local out = io.open(os.getenv("WRK_OUT"), "w")
  out:write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "connect_errors": %d, ' ..
    '"read_errors": %d, "write_errors": %d, "non_2xx_3xx": %d, "timeouts": %d, ' ..
    '"latency_ms": {"mean": %.3f, "p50": %.3f, "p90": %.3f, "p99": %.3f, "max": %.3f}}',
    summary.requests, summary.duration, summary.bytes, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency.mean / 1000, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000))
  out:close()
end
"""

WRITER = """
import json, sys, time, django
django.setup()
from kb.models import ErrorRecord
from kb.services import save_curated
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


def log(msg: str) -> None:
    print(f"[load {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def manage(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    done = subprocess.run(
        [PY, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def records(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open() as fh:
        for line in fh:
            obj = json.loads(line)
            out.append(obj.get("record", obj))
    return out


def benign_pastes(recs: list[dict[str, Any]], n: int = 16) -> list[str]:
    """8 KiB of ordinary log lines with one or two known error messages inside."""
    noise = [
        "2026-11-30T03:12:{s:02d}Z INFO  http  GET /api/v1/items/{i} 200 {ms}ms",
        "2026-11-30T03:12:{s:02d}Z DEBUG db    pool checkout conn={i} wait={ms}ms",
        "2026-11-30T03:12:{s:02d}Z WARN  cache miss key=user:{i}:profile ttl=300",
    ]
    messages = [r["errorMessage"] for r in recs if r.get("errorMessage")]
    pastes = []
    for k in range(n):
        lines, i = [], 0
        while sum(len(x) + 1 for x in lines) < PASTE_BYTES - 600:
            lines.append(noise[i % 3].format(s=i % 60, i=i * 7 + k, ms=(i * 13) % 250))
            i += 1
        lines.insert(len(lines) // 2, f"2026-11-30T03:12:44Z ERROR {messages[k % len(messages)]}")
        lines.append(f"2026-11-30T03:12:59Z ERROR {messages[(k * 31 + 7) % len(messages)]}")
        text = "\n".join(lines)
        pastes.append(text[:PASTE_BYTES])
    return pastes


def adversarial_pastes(max_bytes: int) -> list[str]:
    return [
        ("x" * 79 + "\n") * ((max_bytes - 1024) // 80),  # just under the paste limit
        "a" + " " * 20000 + "b\n" + "Error:" + " " * 20000 + "!",  # SO-2016 whitespace
        "x=" * 2500 + "\n" + ("=" * 5000),  # CF-2019 .*(?:.*=.*) bait
        "a" * 30 + "!" + "\n" + "a" * 5000 + "!",  # (a+)+$ bait
        "(" * 5000 + "[" * 5000 + "{" * 5000,  # nesting
        "\x1b[31m" * 3000 + "\r" * 3000 + "\u202e" * 1000,  # control and bidi soup
        ("ERROR " * 2000 + "\n") * 16,  # every line looks like an error
    ]


def write_bodies(folder: Path, pastes: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, text in enumerate(pastes):
        (folder / f"{n}.body").write_text(urllib.parse.urlencode({"text": text}))
    return folder


def csrf_token(base: str) -> str:
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(base + "/", timeout=30).read()
    for cookie in jar:
        if cookie.name == "csrftoken" and cookie.value:
            return cookie.value
    raise SystemExit("no csrftoken cookie from GET /")


def wrk(
    base: str,
    work: Path,
    name: str,
    method: str,
    paths: list[str],
    bodies: Path | None,
    token: str,
    seconds: int,
    connections: int,
) -> subprocess.Popen[str]:
    script = work / "load.lua"
    if not script.exists():  # written once: two clients may start at the same moment
        script.write_text(WRK_LUA)
    paths_file = work / f"{name}.paths"
    paths_file.write_text("\n".join(paths) + "\n")
    env = {**os.environ, "WRK_OUT": str(work / f"{name}.json")}
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        base,
        "--",
        method,
        str(paths_file),
        str(bodies or ""),
        token,
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)


def wrk_result(work: Path, name: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
    proc.communicate(timeout=600)
    data = json.loads((work / f"{name}.json").read_text())
    seconds = data["duration_us"] / 1e6
    data["rps"] = round(data["requests"] / seconds, 1) if seconds else 0.0
    data["errors"] = (
        sum(data[k] for k in ("connect_errors", "read_errors", "write_errors", "non_2xx_3xx"))
        + data["timeouts"]
    )
    return data


def _proc_times(pid: int) -> list[int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [int(x) for x in fields[11:15]]  # utime, stime, cutime, cstime


def cpu_seconds(master: int) -> float:
    """CPU used by the server so far: the arbiter, its live workers, and (through the
    arbiter's cutime/cstime) every worker already recycled by ``max_requests``."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        total = sum(_proc_times(master))
    except (OSError, ValueError):
        return 0.0
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    for pid in out.split():
        with contextlib.suppress(OSError, ValueError):  # a worker that just exited
            total += sum(_proc_times(int(pid))[:2])
    return total / tick


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=60, help="seconds per phase")
    parser.add_argument("--writers-duration", type=int, default=30)
    parser.add_argument("--full", action="store_true", help="the 16.7k dataset, not the demo")
    parser.add_argument("--database-url", help="use this (scratch!) database instead of SQLite")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--phases", default="match,record,list,match+adversarial,writers")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install -y wrk")

    loadavg_start = list(os.getloadavg())
    work = Path(tempfile.mkdtemp(prefix="kb-load-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="kb.settings",
        DATABASE_URL=args.database_url or f"sqlite:///{work / 'load.sqlite3'}",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        STATIC_ROOT=str(work / "static"),
        KB_MATCHER_CACHE_DIR=str(ROOT / ".cache" / "matcher"),
        KB_RATE_LIMIT_PER_MINUTE="100000000",  # on (its cost is measured), never refusing
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY=str(args.workers),
        GUNICORN_ACCESS_LOG=str(work / "access.log"),
        PYTHONUNBUFFERED="1",
    )
    dataset = FULL if args.full else DEMO
    log(f"scratch {work}; dataset {dataset.name}")
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "createcachetable")
    started = time.monotonic()
    manage(env, "import_records", str(dataset))
    import_seconds = time.monotonic() - started
    manage(env, "collectstatic", "--noinput", "-v0")
    log(manage(env, "warm_matcher").strip())

    recs = records(dataset)
    ids = [r["id"] for r in recs]
    tags = sorted({t for r in recs for t in (r.get("tags") or [])})[:50]
    error_log = (work / "error.log").open("w")
    server = subprocess.Popen(
        [str(Path(PY).with_name("gunicorn")), "-c", "python:kb.gunicorn_conf", "kb.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=error_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    results: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(
                    f"server did not start: {(work / 'error.log').read_text()[-3000:]}"
                )
            time.sleep(0.2)
        token = csrf_token(base)
        max_paste = int(env.get("KB_MAX_PASTE_BYTES", 256 * 1024))
        benign = write_bodies(work / "benign", benign_pastes(recs))
        hostile = write_bodies(work / "hostile", adversarial_pastes(max_paste))
        record_paths = [f"/records/{urllib.parse.quote(i)}/" for i in ids[:400]]
        list_paths = ["/records/", "/records/?page=2", "/tags/"] + [
            f"/tags/{urllib.parse.quote(t)}/" for t in tags[:20]
        ]
        warm_up = {}
        for p in ["/", "/records/", "/tags/", record_paths[0]]:
            try:
                with urllib.request.urlopen(base + p, timeout=30) as r:
                    warm_up[p] = r.status
            except urllib.error.HTTPError as exc:
                warm_up[p] = exc.code
        log(f"warm-up statuses: {warm_up}")

        phases = args.phases.split(",")
        for phase in phases:
            cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
            if phase == "match":
                p = wrk(base, work, phase, "POST", ["/match/"], benign, token, args.duration, 4)
                results[phase] = wrk_result(work, phase, p)
            elif phase == "record":
                p = wrk(base, work, phase, "GET", record_paths, None, token, args.duration, 4)
                results[phase] = wrk_result(work, phase, p)
            elif phase == "list":
                p = wrk(base, work, phase, "GET", list_paths, None, token, args.duration, 4)
                results[phase] = wrk_result(work, phase, p)
            elif phase == "match+adversarial":
                p1 = wrk(base, work, "benign", "POST", ["/match/"], benign, token, args.duration, 4)
                p2 = wrk(
                    base, work, "hostile", "POST", ["/match/"], hostile, token, args.duration, 1
                )
                results[phase] = {
                    "benign": wrk_result(work, "benign", p1),
                    "adversarial": wrk_result(work, "hostile", p2),
                }
            elif phase == "writers":
                results[phase] = run_writers(base, work, env, ids, benign, token, args)
            wall = time.monotonic() - t0
            cpu = cpu_seconds(server.pid) - cpu0
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
            log(f"{phase}: {summary(results[phase])}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        error_log.close()
        server_log = (work / "error.log").read_text()
        access_log = work / "access.log"
        access = access_log.read_text().splitlines() if access_log.exists() else []
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
            "database": "postgresql" if args.database_url else "sqlite",
            "workers": args.workers,
            "duration_s": args.duration,
            "paste_bytes": PASTE_BYTES,
            "client": "wrk -t1 -c4 (benign), -c1 (adversarial)",
        },
        "phases": results,
        "server": {
            "worker_timeouts": server_log.count("WORKER TIMEOUT"),
            "tracebacks": server_log.count("Traceback"),
            "database_locked": server_log.count("database is locked"),
            "responses_5xx": sum(1 for line in access if '" 5' in line),
            "requests_logged": len(access),
        },
    }
    report["goals"] = goals(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.output}")
    for name, ok in report["goals"].items():
        log(f"{'PASS' if ok else 'FAIL'} {name}")
    return 0 if all(report["goals"].values()) else 1


def run_writers(
    base: str, work: Path, env: dict[str, str], ids: list[str], benign: Path, token: str, args: Any
) -> dict[str, Any]:
    """8 curator edit streams in 4 processes while the match client runs (RELIABILITY #20)."""
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
        base, work, "writers-match", "POST", ["/match/"], benign, token, args.writers_duration, 4
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
        "import json,sys,django;django.setup();from kb.models import ErrorRecord;"
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


def phase_requests(entry: dict[str, Any]) -> int:
    if "requests" in entry:
        return int(entry["requests"])
    return sum(phase_requests(v) for v in entry.values() if isinstance(v, dict))


def summary(result: dict[str, Any]) -> str:
    if "rps" in result:
        lat = result["latency_ms"]
        return (
            f"{result['rps']} req/s, p50 {lat['p50']} ms, p99 {lat['p99']} ms, "
            f"errors {result['errors']}"
        )
    parts = []
    for key, value in result.items():
        if isinstance(value, dict) and "rps" in value:
            parts.append(f"{key}: {summary(value)}")
        elif not isinstance(value, dict | list):
            parts.append(f"{key}={value}")
    return "; ".join(parts)


def goals(report: dict[str, Any]) -> dict[str, bool]:
    ph = report["phases"]
    out: dict[str, bool] = {}
    if "match" in ph:
        m = ph["match"]
        out["match >= 200 req/s, p99 < 100 ms, 0 errors"] = (
            m["rps"] >= 200 and m["latency_ms"]["p99"] < 100 and m["errors"] == 0
        )
    for name in ("record", "list"):
        if name in ph:
            r = ph[name]
            out[f"{name} >= 300 req/s, p99 < 100 ms, 0 errors"] = (
                r["rps"] >= 300 and r["latency_ms"]["p99"] < 100 and r["errors"] == 0
            )
    if "match+adversarial" in ph:
        b = ph["match+adversarial"]["benign"]
        a = ph["match+adversarial"]["adversarial"]
        out["benign p99 < 250 ms under adversarial load, 0 errors"] = (
            b["latency_ms"]["p99"] < 250 and b["errors"] == 0 and a["errors"] == 0
        )
    if "writers" in ph:
        w = ph["writers"]
        out["writers: 0 errors, all writes present"] = (
            w["write_errors"] == 0
            and w["all_writes_present"]
            and w["match_during_writes"]["errors"] == 0
        )
    s = report["server"]
    out["server: no worker timeouts, 5xx, tracebacks or lock errors"] = not (
        s["worker_timeouts"] or s["responses_5xx"] or s["tracebacks"] or s["database_locked"]
    )
    return out


if __name__ == "__main__":
    sys.exit(main())
