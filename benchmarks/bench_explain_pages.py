"""Does "What the code says" keep the record page and the result card cheap?

The page goal: a record page and a paste result with derived explanations cost at most
1.2 times the same pages without them, warm-cached, in the same run. Each case is
measured with the explanation on and off (``explanation_for`` replaced by one that finds
nothing), alternating rounds so a busy machine slows both alike:

- record page, warm: the page body comes from the fragment cache (what readers get);
- record page, body re-rendered: the fragment cache is emptied before each request, so
  the template, the highlighted snippet and the explanation are rendered every time
  (explanations memoised, as in a worker that has shown the record before);
- result card: ``POST /match/`` with a log naming several explained records.

The database is a scratch one: ``DATABASE_URL`` (default
``sqlite:////tmp/bench-explain-pages.sqlite3``), holding the first ``--records`` lines of
``records-all.jsonl`` from ``KB_DATASET_DIR`` (default ``shared/data`` beside the repo).
Each request is one value on ``benchmarks/timing.py``'s clocks; a side's values of every
round make one timing, and the two sides are compared as ``pyperf compare_to`` does.

Run: ``.venv/bin/python benchmarks/bench_explain_pages.py [--records N] [--rounds N]
[--results=DIR]``; writes ``benchmarks/results/explain-pages.json`` (or into DIR), with the
requests' raw values beside it (``explain-pages.pyperf.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyperf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
RESULTS = REPO / "benchmarks" / "results"
GOAL_RATIO = 1.2

os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-explain-pages.sqlite3")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
os.environ.setdefault("KB_MATCHER_CACHE_DIR", str(REPO / ".cache" / "matcher-bench-explain"))

import django  # noqa: E402
import timing  # noqa: E402 - beside this file, found through the line above

django.setup()

from django.core.cache import caches  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from kb.browse import explanations as explaining  # noqa: E402
from kb.browse import record_page as records  # noqa: E402
from kb.matching import views as paste  # noqa: E402


def ensure_data(limit: int) -> int:
    from kb.records.importer import import_jsonl
    from kb.records.models import ErrorRecord

    call_command("migrate", verbosity=0, interactive=False)
    call_command("createcachetable", verbosity=0)
    have = ErrorRecord.objects.count()
    if have >= limit:
        return have
    source = DATASET_DIR / "records-all.jsonl"
    with source.open("rb") as handle:
        lines = [line for _, line in zip(range(limit), handle, strict=False)]
    import_jsonl(lines, source=source.name)
    return ErrorRecord.objects.count()


@contextmanager
def explanations(on: bool) -> Iterator[None]:
    if on:
        yield
        return
    real_records, real_paste = records.explanation_for, paste.explanation_for
    records.explanation_for = paste.explanation_for = lambda record: None
    try:
        yield
    finally:
        records.explanation_for, paste.explanation_for = real_records, real_paste


def _request(client: Client, request: tuple) -> int:
    method, url, data = request
    response = getattr(client, method)(url, data) if data else getattr(client, method)(url)
    if response.status_code != 200:
        raise SystemExit(f"{method.upper()} {url} -> {response.status_code}")
    return response.status_code


def measure(
    name: str,
    client: Client,
    requests: list[tuple],
    refresh: bool,
    rounds: int,
    kept: list[pyperf.Benchmark],
) -> dict[str, Any]:
    # CPU time of this process (Python and in-process SQLite): what the request costs,
    # without the wait for a core on a busy machine, which would swamp a 1.2 ratio.
    cpu: dict[bool, list[float]] = {True: [], False: []}
    before = caches["fragments"].clear if refresh else None
    for round_index in range(rounds):
        for on in (True, False) if round_index % 2 == 0 else (False, True):
            with explanations(on):
                caches["fragments"].clear()
                for request in requests:  # warm this variant first
                    if before is not None:
                        before()
                    _request(client, request)
                side = "with" if on else "without"
                one = timing.time_each(
                    f"{name}, {side}, round {round_index + 1}",
                    lambda request: _request(client, request),
                    requests,
                    before=before,
                )
                kept += one.benchmarks
                cpu[on] += one.cpu.get_values()
    with_ = timing.from_values(f"{name}, with", cpu[True], "time.process_time()")
    without = timing.from_values(f"{name}, without", cpu[False], "time.process_time()")
    kept += [with_, without]
    ratio = with_.mean() / without.mean()
    return {
        "with_cpu_mean_ms": round(with_.mean() * 1000, 3),
        "without_cpu_mean_ms": round(without.mean() * 1000, 3),
        "ratio": round(ratio, 3),
        "with_vs_without": timing.compare(without, with_),
        "requests": with_.get_nvalue(),
        "meets_goal": ratio <= GOAL_RATIO,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    parser.add_argument("--quick", action="store_true", help="fewer records and rounds")
    args = parser.parse_args()
    if args.quick:
        args.records, args.rounds = min(args.records, 600), min(args.rounds, 2)
    if not (DATASET_DIR / "records-all.jsonl").exists():
        print(f"bench_explain_pages: no dataset in {DATASET_DIR}; nothing measured")
        return 0
    from kb.records.models import ErrorRecord

    count = ensure_data(args.records)
    explained = []
    for record in ErrorRecord.objects.exclude(source_code="").order_by("id")[:400]:
        found = explaining.explanation_for(record)
        if found is not None and found.function and found.condition:
            explained.append(record)
        if len(explained) == 40:
            break
    client = Client()
    pages = [("get", f"/records/{r.pk}/", None) for r in explained]
    log = "\n".join(f"ERROR {r.error_message}" for r in explained[:6])
    cards = [("post", "/match/", {"text": log})]
    kept: list[pyperf.Benchmark] = []
    cases = {
        "record_page_warm": (pages, False),
        "record_page_rerendered": (pages, True),
        "result_cards": (cards * 10, False),
    }
    result: dict[str, Any] = {
        "records_in_db": count,
        "explained_records_used": len(explained),
        "goal_ratio": GOAL_RATIO,
    }
    for name, (requests, refresh) in cases.items():
        result[name] = measure(name, client, requests, refresh, args.rounds, kept)
    out = args.results / "explain-pages.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    raw = timing.dump("explain-pages", kept, args.results)
    ratios = ", ".join(f"{name} {result[name]['ratio']}" for name in cases)
    met = all(result[name]["meets_goal"] for name in cases)
    verdict = "met" if met else "missed"
    print(f"with/without: {ratios} (goal <= {GOAL_RATIO}: {verdict}); wrote {out} and {raw.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
