"""PostgreSQL: the importer's new rows through ``COPY`` against ``executemany``, same run.

``kb.records.importer.rows`` writes new record, history and tag rows on PostgreSQL either through
``COPY ... FROM STDIN`` (psycopg 3's ``cursor.copy()``, ``POSTGRES_COPY = True``) or, as
it did before, through ``executemany`` (psycopg's batched inserts). The COPY path stays
only if it makes the whole import at least 20% faster (``KEEP_BELOW``: COPY's wall time at
most 0.8 of the other's); this benchmark is that measurement.

Each case is a fresh child process importing a file into the same migrated PostgreSQL
database, its import tables emptied first (``TRUNCATE``); the two writers alternate
(A B A B ...) and each keeps its best run, since the machine is shared. Files: the real
``records-all.jsonl`` and a synthesised file of ``--records`` records (default 100k; the
synthesis of ``bench_import.py``). After each import the child hashes ``export_records``'
output: both writers must store the same records.

Needs PostgreSQL: ``KB_BENCH_DATABASE_URL`` or a ``postgres://`` ``DATABASE_URL`` (a
scratch database: its records are replaced). Without one it says so and writes nothing.
Writes ``benchmarks/results/import-postgresql.json``. ``--quick``: the real file only, one
round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "load"))

from bench_import import SOURCE, synthesise  # noqa: E402
from server import last_json, python  # noqa: E402

RESULTS = HERE / "results" / "import-postgresql.json"
KEEP_BELOW = 0.8
TABLES = "kb_errorrecord, kb_historicalerrorrecord, kb_recordtag, kb_tag"

CHILD = r"""
import hashlib, json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
import django
django.setup()
from django.db import connection
import kb.records.importer.rows as rows
from kb.records.exporter import export_lines
from kb.records.importer import import_jsonl, read_lines
writer, path, tables = sys.argv[1], sys.argv[2], sys.argv[3]
rows.POSTGRES_COPY = writer == "copy"
with connection.cursor() as cursor:
    cursor.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
t0, c0 = time.perf_counter(), time.process_time()
with open(path, "rb") as fh:
    r = import_jsonl(read_lines(fh), source=os.path.basename(path))
out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
out.update({k: getattr(r, k) for k in ("created", "rejected", "disabled")})
digest = hashlib.sha256()
for line in export_lines():
    digest.update(line.encode() + b"\n")
out["export_sha256"] = digest.hexdigest()
print(json.dumps(out))
"""


def stamp(loadavg_start: list[float]) -> dict[str, Any]:
    """When the run ended and on what: a result file's ``when`` and ``machine``."""
    return {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_at_start": loadavg_start,
            "loadavg_at_end": list(os.getloadavg()),
        },
    }


def database_url() -> str | None:
    for url in (os.environ.get("KB_BENCH_DATABASE_URL"), os.environ.get("DATABASE_URL")):
        if url and url.startswith("postgres"):
            return url
    return None


def child(env: dict[str, str], writer: str, path: Path) -> dict:
    return last_json(python(env, "-c", CHILD, writer, str(path), TABLES, timeout=4 * 3600))


def run_file(env: dict[str, str], path: Path, rounds: int) -> dict:
    runs: dict[str, list[dict]] = {"executemany": [], "copy": []}
    for _ in range(rounds):
        for writer in runs:
            runs[writer].append(child(env, writer, path))
            r = runs[writer][-1]
            print(f"  {path.name} {writer}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU")
    best = {w: min(rs, key=lambda r: r["wall_s"]) for w, rs in runs.items()}
    records = best["copy"]["created"]
    ratio = best["copy"]["wall_s"] / best["executemany"]["wall_s"]
    return {
        "file": path.name,
        "records": records,
        "rounds": rounds,
        "executemany_wall_s": round(best["executemany"]["wall_s"], 2),
        "copy_wall_s": round(best["copy"]["wall_s"], 2),
        "executemany_cpu_s": round(best["executemany"]["cpu_s"], 2),
        "copy_cpu_s": round(best["copy"]["cpu_s"], 2),
        "executemany_records_per_s": round(records / best["executemany"]["wall_s"]),
        "copy_records_per_s": round(records / best["copy"]["wall_s"]),
        "copy_over_executemany_wall": round(ratio, 3),
        "same_export": len({r["export_sha256"] for rs in runs.values() for r in rs}) == 1,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args, _ = parser.parse_known_args(argv)
    url = database_url()
    if url is None:
        print("bench_copy: skipped, no PostgreSQL (set KB_BENCH_DATABASE_URL)")
        return 0
    if not SOURCE.exists():
        print(f"bench_copy: skipped, {SOURCE} is missing (set KB_DATASET_DIR)")
        return 0
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "kb.settings"}
    python(env, "manage.py", "migrate", "--noinput", "-v0")
    tmp = Path(os.environ.get("KB_BENCH_TMP") or tempfile.gettempdir())
    files = [SOURCE]
    if not args.quick:
        files.append(synthesise(tmp / f"kb-copy-{args.records}.jsonl", args.records))
    rounds = 1 if args.quick else args.rounds
    loadavg_start = list(os.getloadavg())
    cases = [run_file(env, f, rounds) for f in files]
    largest = cases[-1]
    keep = largest["copy_over_executemany_wall"] <= KEEP_BELOW and all(
        c["same_export"] for c in cases
    )
    report = {
        "benchmark": "Import on PostgreSQL: COPY against executemany",
        "what": (
            "The importer's new rows (records, history, tags) written through COPY against "
            "executemany, each import a fresh child process into the same emptied "
            "PostgreSQL tables, the best of the alternated rounds. COPY stays if its wall "
            f"time is at most {KEEP_BELOW} of executemany's on the largest file."
        ),
        **stamp(loadavg_start),
        "cases": cases,
        "keep_copy": keep,
    }
    out = RESULTS.with_name("import-postgresql-quick.json") if args.quick else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"keep COPY: {keep}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
