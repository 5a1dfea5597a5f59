"""The learning loop's share of the load test: reports, proposals and votes beside matches.

One wrk client sends the JSON twins of the loop (``POST /api/reports`` with and without
``dry_run``, ``POST /api/proposals``, ``POST /api/feedback``) in a fixed rotation while
the benign match client runs, as people reading their answers would. Each request is a
``(path, body)`` pair: the wrk script pairs the paths file and the bodies folder one to
one, so both lists have the same length here.

The reports are unknown errors (no record matches them) carrying secrets, addresses and
ids that vary from one request to the next, so that filing them folds into a few gaps
rather than opening one per request, as the same error from many people does. The votes
carry no cookie, so every vote is a new browser's and counted (201); proposals go to
records the load test imported, each pending.

The rate limit counts these requests with the matches (``kb.ops.middleware.rate_limit_hit``);
the traffic comes from the same 256 addresses as the benign matches, each far under the
per-client limit, so a 429 here is a failure of the phase, not the limit at work (the
wrk result counts 429s apart, and the goal wants none).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from server import PY, ROOT

JSON = "application/json"
VERDICTS = ["fixed", "not_fixed", "wrong_match"]
FIELDS = ["solutions", "triggerScenarios", "commonSituations", "documentation", "preventionTips"]
# Unknown errors, each with the values a real paste would vary (planted secrets included:
# what is stored is redacted on the server).
UNKNOWN = [
    "2026-12-01T04:0{m}:1{s}Z ERROR frobnicator: spline {n} failed to reticulate on host "
    "node-{n}.internal (10.0.{a}.{b}) for user{n}@example.com",
    "2026-12-01T04:0{m}:2{s}Z FATAL quux-daemon: cannot open ledger /home/u{n}/ledger-{n}.db: "
    "token AKIA{key} rejected",
    "2026-12-01T04:0{m}:3{s}Z ERROR wibble.sync: upstream postgres://svc:pw{n}@db{a}:5432/app "
    "answered checksum mismatch in page {n}",
]


def report(n: int, dry_run: bool) -> dict[str, Any]:
    line = UNKNOWN[n % len(UNKNOWN)].format(
        m=n % 10, s=n % 10, n=n, a=n % 250, b=(n * 7) % 250, key=f"{n:016d}"[:16].upper()
    )
    text = f"2026-12-01T04:00:00Z INFO  worker started\n{line}\n"
    return {"text": text, "dry_run": dry_run}


def requests(ids: list[str], n: int = 64) -> list[tuple[str, dict[str, Any]]]:
    """``n`` requests in rotation: dry-run report, filed report, proposal, vote."""
    out: list[tuple[str, dict[str, Any]]] = []
    for k in range(n):
        record = ids[(k * 37) % len(ids)]
        kind = k % 4
        if kind == 0:
            out.append(("/api/reports", report(k, dry_run=True)))
        elif kind == 1:
            out.append(("/api/reports", report(k, dry_run=False)))
        elif kind == 2:
            text = f"Load test proposal {k}: restart the worker after raising its limit."
            out.append(
                (
                    "/api/proposals",
                    {"record_id": record, "field": FIELDS[k % len(FIELDS)], "text": text},
                )
            )
        else:
            out.append(("/api/feedback", {"record_id": record, "verdict": VERDICTS[k % 3]}))
    return out


def write(folder: Path, reqs: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], Path]:
    """The paths list and the bodies folder (``<n>.body``) for the wrk script."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, (_, body) in enumerate(reqs):
        (folder / f"{n}.body").write_bytes(json.dumps(body).encode())
    return [path for path, _ in reqs], folder


COUNT = (
    "import json,django;django.setup();"
    "from kb.loop.models import Gap, Proposal, Vote;"
    "print(json.dumps({'gaps': Gap.objects.count(), 'gap_reports': sum("
    "Gap.objects.values_list('count', flat=True)), 'proposals': Proposal.objects.count(), "
    "'votes': Vote.objects.count()}))"
)


def stored(env: dict[str, str]) -> dict[str, int]:
    """How many gaps (and reports folded into them), proposals and votes are stored."""
    done = subprocess.run(
        [PY, "-c", COUNT], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(base: str, reqs: list[tuple[str, dict[str, Any]]], post: Any) -> list[int]:
    """Each request once, before the phase: the statuses it answers (all 2xx expected)."""
    statuses = []
    for n, (path, body) in enumerate(reqs[:8]):
        status, _ = post(base + path, json.dumps(body).encode(), JSON, "", f"198.18.8.{n + 1}")
        statuses.append(status)
    return statuses
