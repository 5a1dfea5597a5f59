"""Import and export throughput and peak memory (memory flat as the file grows).

Files: the real ``records-all.jsonl`` (16,720 records) and a 200k-record file synthesised
from it into a temporary directory (never into the repo): new ids, and every message and
pattern mutated (a suffix word per copy), so admission and the tag/FTS indexes see new
text. Each import runs in a fresh child process on a scratch SQLite file migrated once;
the child imports as ``manage.py import_records`` does and reports wall time, CPU time and
peak RSS. Then a re-import
of the same file (everything unchanged) and an export are timed, and the baseline of the
same run: SQLite alone writing the same rows the way the import does (same batches,
commits, history, tag and search statements) into a fresh database, with no Python in
between. The import's time over it is what parsing, checks and Python cost.

The machine is shared: the result keeps CPU seconds beside wall seconds and the load
average, since wall time on a busy 2-core box says more about the neighbours.

Run: ``.venv/bin/python benchmarks/bench_import.py [--quick]`` (``--quick``: only the 16.7k
file on a scratch SQLite in the temp dir, for measuring a change; it writes
``benchmarks/results/import-quick.json``). Writes ``benchmarks/results/import.json``.
Env: ``KB_DATASET_DIR`` (or ``KB_SHARED_DATA``), ``KB_BENCH_TMP``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The full dataset, where tests/datasets.py looks for it (``KB_DATASET_DIR``).
DATA = Path(
    os.environ.get("KB_DATASET_DIR")
    or os.environ.get("KB_SHARED_DATA")
    or REPO.parent / "shared" / "data"
)
SOURCE = DATA / "records-all.jsonl"
RESULTS = REPO / "benchmarks" / "results" / "import.json"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _mutate_word(rec: dict, copy: int, suffix: str) -> bool:
    """Replace one literal word that the message and the pattern share with a word of this
    copy's own, at a position picked per record and copy; False when there is none."""
    message, pattern = rec["errorMessage"], rec["messagePattern"]
    shared = [
        w
        for w in dict.fromkeys(re.findall(r"(?<![\\\w])[A-Za-z]{4,}(?!\w)", pattern))
        if len(re.findall(rf"(?<!\w){w}(?!\w)", message)) == 1
        and len(re.findall(rf"(?<![\\\w]){w}(?!\w)", pattern)) == 1
    ]
    if not shared:
        return False
    word = shared[int(hashlib.sha1(f"{rec['id']}:{copy}".encode()).hexdigest(), 16) % len(shared)]
    new = f"{word}{suffix.strip()}"
    rec["errorMessage"] = re.sub(rf"(?<!\w){word}(?!\w)", new, message)
    rec["messagePattern"] = re.sub(rf"(?<![\\\w]){word}(?!\w)", new, pattern)
    return True


def synthesise(
    target: Path, count: int, *, keep_originals: bool = False, mutate: str = "suffix"
) -> Path:
    """``count`` records from the real file: new ids, mutated message and pattern.

    ``keep_originals``: the real records come first, unchanged, and only the copies after
    them are mutated: a large set that still holds every real error, so a real paste
    matches at every size (the scale benchmark's set).

    ``mutate``: ``"suffix"`` appends a word of the copy's to message and pattern (every
    copy extends the real message, so a cut-off line of it matches every copy: the worst
    case for a paste); ``"word"`` changes one word the message and pattern share, at a
    position picked per record and copy (as real messages differ), falling back to the
    suffix where they share none.
    """
    marker = target.with_suffix(".count")
    stamp = f"{count}{' originals' if keep_originals else ''} {mutate}".replace(" suffix", "")
    if target.exists() and marker.exists() and marker.read_text() == stamp:
        return target
    originals = SOURCE.read_bytes().splitlines()
    written = 0
    with target.open("wb") as out:
        if keep_originals:
            for raw in originals[:count]:
                out.write(raw.rstrip(b"\r") + b"\n")
                written += 1
        copy = 0
        while written < count:
            suffix = f" {WORDS[copy % len(WORDS)]}{copy}"
            for raw in originals:
                if written >= count:
                    break
                obj = json.loads(raw)
                rec = obj["record"]
                rec["id"] = hashlib.sha1(f"{rec['id']}:{copy}".encode()).hexdigest()[:16]
                rec["slug"] = (rec["slug"][:180] + f"-{copy}")[:200]
                if mutate != "word" or not _mutate_word(rec, copy, suffix):
                    rec["errorMessage"] += suffix
                    rec["messagePattern"] += suffix
                out.write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
                written += 1
            copy += 1
    marker.write_text(stamp)
    return target


CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
import django
django.setup()
mode, path = sys.argv[1], sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
if mode == "import":
    from kb.records.importer import import_jsonl, read_lines
    with open(path, "rb") as fh:
        r = import_jsonl(read_lines(fh), source=os.path.basename(path))
    out = {k: getattr(r, k) for k in ("created", "updated", "unchanged", "rejected", "disabled")}
elif mode == "floor":
    # SQLite's own share of an import (see ``run_case``): the rows an import stored (records,
    # history, tags), copied from its database in the import's batches and commits, the
    # search index kept per batch as the import keeps it, and nothing from Python.
    import sqlite3
    from django.db import connection, transaction
    from kb.records.importer.core import BATCH_SIZE, COMMIT_RECORDS
    from kb.records.search_index import search_index_deferred
    src = sqlite3.connect(path)
    count = src.execute("SELECT max(rowid) FROM kb_errorrecord").fetchone()[0]
    src.close()
    between = "WHERE rowid > %s AND rowid <= %s ORDER BY rowid"
    copy = f"INSERT INTO kb_errorrecord SELECT * FROM src.kb_errorrecord {between}"
    history = "INSERT INTO kb_historicalerrorrecord SELECT * FROM src.kb_historicalerrorrecord"
    history += " WHERE history_id > %s AND history_id <= %s ORDER BY history_id"
    tags = "INSERT INTO kb_recordtag (record_id, tag_id, position) SELECT t.record_id, t.tag_id,"
    tags += " t.position FROM src.kb_recordtag t WHERE t.record_id IN (SELECT id FROM"
    tags += " kb_errorrecord WHERE rowid > %s AND rowid <= %s) ORDER BY t.id"
    with connection.cursor() as cursor:
        cursor.execute("ATTACH DATABASE %s AS src", [path])
    t0, c0 = time.perf_counter(), time.process_time()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO kb_tag SELECT * FROM src.kb_tag ORDER BY id")
    for unit in range(0, count, COMMIT_RECORDS):
        with transaction.atomic():
            for start in range(unit, min(unit + COMMIT_RECORDS, count), BATCH_SIZE):
                end = min(start + BATCH_SIZE, count)
                deferred = search_index_deferred(connection)
                with connection.cursor() as cursor, deferred as reindex:
                    cursor.execute(copy, [start, end])
                    cursor.execute(history, [start, end])
                    reindex([], after_rowid=start)
                    cursor.execute(tags, [start, end])
    out = {"records": count}
else:
    from kb.records.exporter import export_lines
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for line in export_lines():
            fh.write(line + "\n")
            n += 1
    out = {"exported": n}
out["wall_s"] = time.perf_counter() - t0
out["cpu_s"] = time.process_time() - c0
try:  # VmHWM: this process's own peak (ru_maxrss can carry the forking parent's)
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
    out["peak_rss_mb"] = int(hwm.split()[1]) / 1024
except OSError:
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(db: Path, mode: str, path: Path) -> dict:
    # Production settings: with DEBUG on, Django would also record every query it runs.
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-import-" + "x" * 40),
    }
    result = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def migrated_template(tmp: Path) -> Path:
    db = tmp / "template.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--skip-checks", "-v0"],
        cwd=REPO,
        env=env,
        check=True,
    )
    return db


def fresh_copy(template: Path, target: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    src, dst = sqlite3.connect(template), sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def run_case(name: str, path: Path, template: Path, tmp: Path) -> dict:
    db = fresh_copy(template, tmp / f"{name}.sqlite3")
    size_mb = path.stat().st_size / 1e6
    print(f"  {name}: importing {size_mb:,.0f} MB ...", flush=True)
    first = child(db, "import", path)
    print(f"  {name}: re-importing ...", flush=True)
    again = child(db, "import", path)
    print(f"  {name}: exporting ...", flush=True)
    export = child(db, "export", tmp / f"{name}.export.jsonl")
    # The baseline: the same rows written by SQLite alone, as the import writes them (one
    # writer, same batches, commits and checkpoints), into a fresh database; the import's
    # time over this one is what parsing, checks and Python add.
    print(f"  {name}: SQLite's share alone ...", flush=True)
    floor = child(fresh_copy(template, tmp / f"{name}-floor.sqlite3"), "floor", db)
    n = first["created"] + first["updated"] + first["unchanged"] + first["rejected"]
    return {
        "file": str(path),
        "records": n,
        "file_mb": round(size_mb, 1),
        "db_mb": round(db.stat().st_size / 1e6, 1),
        "import": first,
        "import_records_per_s_wall": round(n / first["wall_s"]),
        "import_records_per_s_cpu": round(n / first["cpu_s"]),
        "reimport": again,
        "reimport_records_per_s_wall": round(n / again["wall_s"]),
        "reimport_records_per_s_cpu": round(n / again["cpu_s"]),
        "export": export,
        "export_records_per_s_wall": round(export["exported"] / export["wall_s"]),
        "sqlite_floor": floor,
        "sqlite_floor_records_per_s_wall": round(floor["records"] / floor["wall_s"]),
        "import_over_sqlite_floor_wall": round(first["wall_s"] / floor["wall_s"], 2),
    }


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if not SOURCE.is_file():
        print(f"needs {SOURCE.name} from the full dataset (set KB_DATASET_DIR)", file=sys.stderr)
        return 2
    big = 200_000
    base = Path(os.environ.get("KB_BENCH_TMP", tempfile.gettempdir())) / "kb-bench-import"
    base.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    synthetic = None
    if not quick:
        print(f"Synthesising {big:,} records into {base} ...", flush=True)
        synthetic = synthesise(base / f"records-{big // 1000}k.jsonl", big)
    with tempfile.TemporaryDirectory(dir=base) as scratch:
        tmp = Path(scratch)
        template = migrated_template(tmp)
        cases = [run_case("16.7k", SOURCE, template, tmp)]
        if synthetic is not None:
            cases.append(run_case(f"{big // 1000}k", synthetic, template, tmp))
    results = {
        "benchmark": "import",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        # Each layer of the importer measured against the plain path, and the figures
        # before and after the layers that did not pay their way were removed.
        "layers": "benchmarks/results/import-layers.json",
        "cases": cases,
    }
    results_file = RESULTS.with_name("import-quick.json") if quick else RESULTS
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    rates = ", ".join(f"{c['records']:,} at {c['import_records_per_s_wall']:,}/s" for c in cases)
    print(f"import (wall): {rates}; wrote {results_file.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
