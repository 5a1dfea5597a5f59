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
Run: ``.venv/bin/python benchmarks/bench_explain_pages.py``; writes
``benchmarks/results/explain-pages.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
OUT = REPO / "benchmarks" / "results" / "explain-pages.json"
GOAL_RATIO = 1.2

os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-explain-pages.sqlite3")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
os.environ.setdefault("KB_MATCHER_CACHE_DIR", str(REPO / ".cache" / "matcher-bench-explain"))

import django  # noqa: E402

django.setup()

from django.core.cache import caches  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from kb.browse import explanations as explaining  # noqa: E402
from kb.browse import record as records  # noqa: E402
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


def timed(client: Client, method: str, url: str, data: dict | None, refresh: bool) -> float:
    if refresh:
        caches["fragments"].clear()
    # CPU time of this process (Python and in-process SQLite): what the request costs,
    # without the wait for a core on a busy machine, which would swamp a 1.2 ratio.
    started = time.process_time()
    response = getattr(client, method)(url, data) if data else getattr(client, method)(url)
    elapsed = (time.process_time() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{method.upper()} {url} -> {response.status_code}")
    return elapsed


def measure(client: Client, requests: list[tuple], refresh: bool, rounds: int) -> dict[str, Any]:
    times: dict[bool, list[float]] = {True: [], False: []}
    for round_index in range(rounds):
        for on in (True, False) if round_index % 2 == 0 else (False, True):
            with explanations(on):
                caches["fragments"].clear()
                for method, url, data in requests:  # warm this variant first
                    timed(client, method, url, data, refresh)
                times[on].extend(timed(client, m, u, d, refresh) for m, u, d in requests)
    with_mean = statistics.fmean(times[True])
    without_mean = statistics.fmean(times[False])
    ratio = with_mean / without_mean
    return {
        "with_cpu_mean_ms": round(with_mean, 3),
        "without_cpu_mean_ms": round(without_mean, 3),
        "ratio": round(ratio, 3),
        "requests": len(times[True]),
        "meets_goal": ratio <= GOAL_RATIO,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
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
    result = {
        "records_in_db": count,
        "explained_records_used": len(explained),
        "goal_ratio": GOAL_RATIO,
        "record_page_warm": measure(client, pages, refresh=False, rounds=args.rounds),
        "record_page_rerendered": measure(client, pages, refresh=True, rounds=args.rounds),
        "result_cards": measure(client, cards * 10, refresh=False, rounds=args.rounds),
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name in ("record_page_warm", "record_page_rerendered", "result_cards"):
        row = result[name]
        print(
            f"{name:24} with {row['with_cpu_mean_ms']:8.3f} ms"
            f"  without {row['without_cpu_mean_ms']:8.3f} ms"
            f"  ratio {row['ratio']:.3f}  {'ok' if row['meets_goal'] else 'OVER'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
