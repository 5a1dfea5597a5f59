"""10^5 to 10^6 records on PostgreSQL, end to end, against the real 16.7k in the same run.

Issue 13's "10^6 records" section: for the real ``records-all.jsonl`` first (the baseline)
and then a file of ``--records`` records synthesised from it (``bench_import.synthesise``
with ``keep_originals``: the real records unchanged, then copies with new ids and one word
of every message and pattern changed (``mutate="word"``), so the matcher compiles every one
and a real paste still finds its errors at the large size, as it would among other
projects' errors), each into the same PostgreSQL database with its import tables and
matcher store emptied first:

1. import: ``manage.py import_records --json --no-matcher`` in its own process (records a
   second; the command's own matcher build is left out, so step 2 times it alone);
2. matcher build: the ``warm_matcher`` task run by a real ``db_worker`` (in its own
   process, with an empty matcher cache), as after an admin import: the compile time and
   that process's peak memory; the build is published to the shared matcher store;
3. a fresh host: gunicorn with one worker started on an EMPTY local matcher cache, so it
   loads the build from the store; the time until ``POST /api/match`` first answers 200,
   and then the memory (RSS and PSS, from ``/proc``) of the arbiter, which loads the
   matcher before forking, and its workers; then two workers, and the PSS of the whole
   server with two over with one (issue 13 asks for at most 1.3);
4. pages: the record page, search, the tag page, a paste of known errors, a paste of
   errors the dataset does not hold (no confident match: the similar-message fallback),
   and the admin's record list (plain and searched), each p95 over many requests
   in-process with Django's test Client, as ``bench_pages.py`` measures them (its cases
   and its ``run_case``, on ``benchmarks/timing.py``).

Long: opt-in. ``make bench-1m`` (10^6) or ``.venv/bin/python benchmarks/bench_scale.py
--records 100000``; under ``make bench`` it runs only with ``BENCH_1M=1``. Needs
PostgreSQL: ``KB_BENCH_DATABASE_URL`` or a ``postgres://`` ``DATABASE_URL``, a scratch
database (its records are replaced). ``KB_BENCH_SECRET_KEY`` fixes the key the stored
matcher is signed with (else a new one a run), so that ``--pages-only`` and
``--rebuild-only`` load the full run's build instead of compiling it again. Writes
``benchmarks/results/scale-<records>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "load"))

from bench_copy import TABLES, database_url, stamp  # noqa: E402
from bench_import import SOURCE, synthesise  # noqa: E402
from rebuild_goal import IMPORT_SHARE, REBUILD_GOAL  # noqa: E402
from server import (  # noqa: E402
    free_port,
    last_json,
    manage,
    python,
    scratch_env,
    start_server,
    stop_server,
)

RESULTS = HERE / "results"
# Emptied with the records before each size: a build a previous run published for the same
# records would be loaded from the store instead of compiled.
STORE_TABLES = "kb_matcherblobpart, kb_matcherblob"
MILLION = 1_000_000

BUILD = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
import django
django.setup()
from django.core.management import call_command
from django.db.models import Sum
from kb.curation.tasks import warm_matcher
from kb.matching.models import MatcherBlobPart
def stored():
    return MatcherBlobPart.objects.aggregate(n=Sum("size"))["n"] or 0
held = stored()
# As after an admin import: the build is a task, run by a real worker (this process).
warm_matcher.enqueue()
started = time.perf_counter()
call_command("db_worker", batch=True, startup_delay=False, interval=0.1, verbosity=0)
out = {"build_s": time.perf_counter() - started}
out["published_mb"] = round((stored() - held) / 1e6, 1)  # the parts the store lacked
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread's, the shards' compiles too
out["cpu_s"] = usage.ru_utime + usage.ru_stime
from kb.matching.holder import get_matcher
stats = get_matcher().stats  # the build the task left in this process, not a new one
keys = ("shards", "shards_compiled", "patterns", "patterns_compiled", "similarity_s",
        "similarity_resumed", "compile_s")
out["stats"] = {k: stats.get(k) for k in keys}
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
out["peak_rss_mb"] = int(hwm.split()[1]) / 1024
print(json.dumps(out))
"""

PAGES = r"""
import json, os, random, sys
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import bench_pages as bp
import page_inputs as pi
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
settings.DEBUG = False
settings.KB_RATE_LIMIT_PER_MINUTE = 0
n = int(sys.argv[1])
targets = bp.pick_targets(random.Random(4))
client = Client()
admin = get_user_model().objects.filter(username="bench-scale").first()
if admin is None:
    admin = get_user_model().objects.create_superuser("bench-scale", "b@example.invalid", "x")
client.force_login(admin)
paste = bp.paste_text()
unknown = pi.unknown_paste_text()
fresh = pi.fresh_searches(random.Random(5), n + 1)
cases = [
    ("record page", [("get", f"/records/{i}/", {}) for i in targets["records"]]),
    ("search /records/?q=", [("get", "/records/", {"data": {"q": q}}) for q in bp.SEARCHES]),
    ("search, each query new (uncached)",
     [("get", "/records/", {"data": {"q": q}}) for q in fresh]),
    ("tag page (page 1)", [("get", f"/tags/{t}/", {}) for t in targets["tags"]]),
    ("paste: POST /match/ 8 KiB", [("post", "/match/", {"data": {"text": paste}})]),
    ("paste: unknown errors (suggestions)", [("post", "/match/", {"data": {"text": unknown}})]),
    ("admin record list", [("get", "/admin/kb/errorrecord/", {})]),
    ("admin record list, searched",
     [("get", "/admin/kb/errorrecord/", {"data": {"q": q}}) for q in bp.SEARCHES[:5]]),
]
import timeit
def calibration():
    # A fixed pure-Python workload: how fast this machine ran Python during the run (a
    # shared machine's speed moves by tens of percent over an hour).
    work = "sorted(str(i) for i in range(20000))"
    return round(min(timeit.repeat(work, number=5, repeat=7)) * 1000, 2)
before = calibration()
# Issue 24 holds the known-error paste to half the other pages' p95 at every size.
goals = {"paste: POST /match/ 8 KiB": bp.GOAL_MS / 2}
out = [
    bp.run_case(client, name, reqs, n, goals.get(name, bp.GOAL_MS), warm="uncached" not in name)
    for name, reqs in cases
]
for page in out:
    page["calibration_ms"] = [before, calibration()]
print(json.dumps(out))
"""


def child(env: dict[str, str], script: str, *args: str) -> Any:
    return last_json(python(env, "-c", script, *args, timeout=4 * 3600))


def memory(pid: int) -> dict[str, float]:
    """RSS and PSS of one process, in MiB (PSS shares pages with the processes using them)."""
    out: dict[str, float] = {}
    for name, path, key in (
        ("rss_mb", "status", "VmRSS:"),
        ("pss_mb", "smaps_rollup", "Pss:"),
    ):
        with contextlib.suppress(OSError, IndexError):
            line = [
                x for x in Path(f"/proc/{pid}/{path}").read_text().splitlines() if x.startswith(key)
            ]
            out[name] = round(int(line[0].split()[1]) / 1024, 1)
    return out


def serve(env: dict[str, str], work: Path, workers: int) -> dict[str, Any]:
    """gunicorn with ``workers`` workers on the built cache: seconds until a match answers,
    and each worker's memory."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**env, "PORT": str(port), "WEB_CONCURRENCY": str(workers), "GUNICORN_TIMEOUT": "600"}
    body = json.dumps({"text": "ERROR connection refused"}).encode()
    started = time.monotonic()
    with (work / "error.log").open("w") as error_log:
        server = start_server(env, work, base, error_log)
        try:
            while True:
                request = urllib.request.Request(
                    base + "/api/match", data=body, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.2)
            serves_s = time.monotonic() - started
            time.sleep(2)  # every worker past its matcher load (``post_worker_init``)
            pids = subprocess.run(
                ["pgrep", "-P", str(server.pid)], capture_output=True, text=True
            ).stdout.split()
            mem = [memory(int(pid)) for pid in pids]
            arbiter = memory(server.pid)
        finally:
            stop_server(server)
    total = round(arbiter.get("pss_mb", 0) + sum(w.get("pss_mb", 0) for w in mem), 1)
    loaded = "matcher loaded from store" in (work / "error.log").read_text()
    return {
        "serves_s": round(serves_s, 2),
        "workers": mem,
        "arbiter": arbiter,
        "total_pss_mb": total,
        "loaded_from_store": loaded,
    }


def run_size(env: dict[str, str], path: Path, work: Path, n_requests: int) -> dict[str, Any]:
    print(f"== {path.name}", flush=True)
    child(
        env,
        "import django,sys;django.setup();from django.db import connection;"
        "connection.cursor().execute(f'TRUNCATE {sys.argv[1]} RESTART IDENTITY CASCADE');"
        "print('{}')",
        f"{TABLES}, {STORE_TABLES}",
    )
    started = time.monotonic()
    report = json.loads(
        manage(env, "import_records", str(path), "--json", "--no-matcher", timeout=6 * 3600)
    )
    import_s = time.monotonic() - started
    print(f"  import: {report['created']} records in {import_s:.0f} s", flush=True)
    cache = work / "matcher-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**env, "KB_MATCHER_CACHE_DIR": str(cache)}
    build = child(env, BUILD)
    print(f"  matcher build: {build['build_s']:.0f} s, peak {build['peak_rss_mb']:.0f} MB")

    def fresh(workers: int) -> dict[str, Any]:
        empty = work / f"fresh-host-cache-{workers}"
        shutil.rmtree(empty, ignore_errors=True)
        return serve({**env, "KB_MATCHER_CACHE_DIR": str(empty)}, work, workers)

    one, two = fresh(1), fresh(2)
    print(f"  fresh host: serves after {one['serves_s']} s", flush=True)
    served = {
        "fresh_host_serves_s": one["serves_s"],
        "worker_memory": one["workers"][0] if one["workers"] else {},
        "two_workers_memory": two["workers"],
        "fresh_host_loaded_from_store": one["loaded_from_store"],
        "server_pss_mb": {"one_worker": one["total_pss_mb"], "two_workers": two["total_pss_mb"]},
        "two_workers_pss_over_one": (
            round(two["total_pss_mb"] / one["total_pss_mb"], 2) if one["total_pss_mb"] else None
        ),
    }
    pages = child(env, PAGES, str(n_requests))
    return {
        "file": path.name,
        "records": report["created"],
        "import_s": round(import_s, 1),
        "import_records_per_s": round(report["created"] / import_s),
        "import_report": {k: report[k] for k in ("created", "rejected", "disabled")},
        "matcher_build_s": round(build["build_s"], 1),
        # CPU time of every thread over the wall time: how many cores the build kept busy
        "matcher_build_cores": round(build["cpu_s"] / build["build_s"], 2),
        "matcher_build_peak_rss_mb": round(build["peak_rss_mb"], 1),
        "matcher_build_where": "the warm_matcher task in a db_worker process",
        **served,
        "pages": pages,
    }


REMOVE = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
import django
django.setup()
from kb.records.models import ErrorRecord
with open(sys.argv[1], "rb") as fh:
    ids = [json.loads(line)["record"]["id"] for line in fh if line.strip()]
removed = 0
for i in range(0, len(ids), 5000):
    removed += ErrorRecord.objects.filter(id__in=ids[i : i + 5000]).delete()[0]
print(json.dumps({"removed": removed}))
"""


def rebuild_after_import(
    env: dict[str, str], cache: Path, records: int, full_build_s: float, mutate: str
) -> dict[str, Any]:
    """Issue 24's "a 1% import at 10^6 rebuilds in at most 10% of the full build's time":
    ``records`` * 1% new records (the next copies the synthesiser makes, so new ids and
    patterns) imported into the database the size left, then the ``warm_matcher`` task's
    build in a worker on ``cache`` (the full build's own cache in a full run; with
    ``--rebuild-only``, one the build before the import filled, from the shared store),
    over the full build's time. The same records are then deleted and the build
    timed again, which leaves the database as the size left it."""
    tmp = Path(os.environ.get("KB_BENCH_TMP") or tempfile.gettempdir())
    extra = max(1, round(records * IMPORT_SHARE))
    grown = synthesise(
        tmp / f"kb-scale-{records + extra}.jsonl", records + extra, keep_originals=True,
        mutate=mutate,
    )  # fmt: skip
    tail = tmp / f"kb-scale-{records}-plus-{extra}.jsonl"
    with grown.open("rb") as src, tail.open("wb") as out:
        out.writelines(itertools.islice(src, records, None))
    cache_kind = "the last build's" if cache.exists() else "empty (shards from the store)"
    env = {**env, "KB_MATCHER_CACHE_DIR": str(cache)}
    started = time.monotonic()
    report = json.loads(manage(env, "import_records", str(tail), "--json", "--no-matcher"))
    import_s = time.monotonic() - started
    after_import = child(env, BUILD)
    removed = child(env, REMOVE, str(tail))["removed"]
    after_delete = child(env, BUILD)
    ratio = round(after_import["build_s"] / full_build_s, 3)
    print(
        f"  rebuild after a 1% import: {after_import['build_s']:.1f} s "
        f"({ratio} of the full build's {full_build_s:.0f} s); after deleting them again "
        f"{after_delete['build_s']:.1f} s",
        flush=True,
    )
    return {
        "records": records,
        "imported": report["created"],
        "import_s": round(import_s, 1),
        "cache": cache_kind,
        "full_build_s": full_build_s,
        "after_import": {k: after_import.get(k) for k in ("build_s", "cpu_s", "stats")},
        "after_delete": {k: after_delete.get(k) for k in ("build_s", "cpu_s", "stats")},
        "published_mb": after_import.get("published_mb"),
        "removed": removed,
        "ratio": ratio,
        "goal_ratio": REBUILD_GOAL,
        "met": ratio <= REBUILD_GOAL,
    }


def scaled_over_baseline(sizes: list[dict[str, Any]], key: str) -> dict[str, float]:
    """Each page case's ``key`` at the synthesised size over the same at 16.7k records."""
    if len(sizes) < 2:
        return {}
    base = {p["case"]: p.get(key) for p in sizes[0]["pages"]}
    return {
        p["case"]: round(p[key] / base[p["case"]], 2)
        for p in sizes[-1]["pages"]
        if base.get(p["case"]) and p.get(key) is not None
    }


def remeasure_pages(
    env: dict[str, str], work: Path, records: int, n_requests: int, loadavg_start: list[float]
) -> int:
    """The largest size's page figures again, on the database the last full run left (for
    a change to a page, without the import and the build); the rest of the file stays."""
    out = RESULTS / f"scale-{records}.json"
    try:
        report = json.loads(out.read_text())
        last = report["sizes"][-1]
    except (OSError, ValueError, KeyError, IndexError):
        print(f"bench_scale: --pages-only needs a full run's {out.name} first")
        return 1
    env = {**env, "KB_MATCHER_CACHE_DIR": str(work / "matcher-cache")}  # from the store
    try:
        last["pages"] = child(env, PAGES, str(n_requests))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    last["pages_measured"] = {**stamp(loadavg_start), "how": "--pages-only"}
    sizes = report["sizes"]
    report["p95_scaled_over_baseline"] = scaled_over_baseline(sizes, "p95_ms")
    report["cpu_p95_scaled_over_baseline"] = scaled_over_baseline(sizes, "cpu_p95_ms")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"CPU p95 over 16.7k: {report['cpu_p95_scaled_over_baseline']}; wrote {out}")
    return 0


def remeasure_rebuild(
    env: dict[str, str], work: Path, records: int, mutate: str, loadavg_start: list[float]
) -> int:
    """The rebuild after a 1% import again, on the database the last full run left, over
    the full build of the same records measured in this run, with this code: an empty
    store and an empty cache, as the full run's build. Its cache is then the one the
    rebuild starts from, as in the full run."""
    out = RESULTS / f"scale-{records}.json"
    try:
        report = json.loads(out.read_text())
        last = report["sizes"][-1]
    except (OSError, ValueError, KeyError, IndexError):
        print(f"bench_scale: --rebuild-only needs a full run's {out.name} first")
        return 1
    cache = work / "rebuild-cache"
    try:
        child(
            env,
            "import django,sys;django.setup();from django.db import connection;"
            "connection.cursor().execute(f'TRUNCATE {sys.argv[1]} RESTART IDENTITY CASCADE');"
            "print('{}')",
            STORE_TABLES,
        )
        full = child({**env, "KB_MATCHER_CACHE_DIR": str(cache)}, BUILD)
        full_build_s = round(full["build_s"], 1)
        print(f"  full build (empty store and cache): {full_build_s:.0f} s", flush=True)
        row = rebuild_after_import(env, cache, last["records"], full_build_s, mutate)
        row["full_build"] = {k: full.get(k) for k in ("build_s", "cpu_s", "peak_rss_mb")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    last["rebuild_after_import"] = {
        **row,
        "measured": {**stamp(loadavg_start), "how": "--rebuild-only"},
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int)
    parser.add_argument("--requests", type=int, default=100, help="per page case")
    parser.add_argument(
        "--skip-baseline", action="store_true", help="only the synthesised size, no 16.7k run"
    )
    parser.add_argument(
        "--mutate",
        choices=["word", "suffix"],
        default="word",
        help="how copies differ from the real records (suffix: every copy extends its "
        "real message, so a cut-off line matches all of them; the worst case)",
    )
    parser.add_argument(
        "--pages-only",
        action="store_true",
        help="only re-measure the pages of the database as the last full run left it (the "
        "largest size, its matcher from the store), into that run's result file, stamped",
    )
    parser.add_argument(
        "--rebuild-only",
        action="store_true",
        help="only the rebuild after a 1%% import, on the database the last full run left "
        "(the largest size; its shards from the store), into that run's result file",
    )
    args, _ = parser.parse_known_args(argv)
    if args.records is None:
        if os.environ.get("BENCH_1M") != "1":
            print("bench_scale: skipped (opt-in: make bench-1m, BENCH_1M=1 or --records N)")
            return 0
        args.records = MILLION
    url = database_url()
    if url is None or not SOURCE.exists():
        print("bench_scale: skipped, needs PostgreSQL (KB_BENCH_DATABASE_URL) and the dataset")
        return 0
    work = Path(tempfile.mkdtemp(prefix="kb-scale-"))
    tmp = Path(os.environ.get("KB_BENCH_TMP") or tempfile.gettempdir())
    env = scratch_env(work, free_port(), 1, url)
    # The stored matcher is signed with SECRET_KEY: a later --pages-only or --rebuild-only
    # run loads the full run's build from the store only when it signs with the same key.
    if os.environ.get("KB_BENCH_SECRET_KEY"):
        env["SECRET_KEY"] = os.environ["KB_BENCH_SECRET_KEY"]
    env["ALLOWED_HOSTS"] = "127.0.0.1,testserver"  # gunicorn's, and the test Client's
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "createcachetable")
    manage(env, "collectstatic", "--noinput", "-v0")
    # The server's memory settings decide how much of a large database is read from disk
    # per page: recorded beside the figures (docs/deployment.md says what to set).
    postgresql = child(
        env,
        "import django,json;django.setup();from django.db import connection;"
        "c=connection.cursor();out={}\n"
        "for name in ('server_version','shared_buffers','effective_cache_size','work_mem'):\n"
        "    c.execute('SHOW '+name);out[name]=c.fetchone()[0]\n"
        "print(json.dumps(out))",
    )
    loadavg_start = list(os.getloadavg())
    if args.pages_only:
        return remeasure_pages(env, work, args.records, args.requests, loadavg_start)
    if args.rebuild_only:
        return remeasure_rebuild(env, work, args.records, args.mutate, loadavg_start)
    sizes: list[dict[str, Any]] = []

    def write() -> Path:
        """The result file so far: a size's figures are kept even if a later one fails."""
        report = {
            "benchmark": f"Scale: {args.records:,} records on PostgreSQL",
            "what": (
                "Import, matcher build (the warm_matcher task in a db_worker), a fresh host's time "
                "until it serves from the built cache, one worker's memory, and page p95s, at "
                "the real 16.7k records and at the synthesised size, in the same run."
            ),
            **stamp(loadavg_start),
            "postgresql": postgresql,
            "mutate": args.mutate,
            "sizes": sizes,
            # wall p95 suffers from the neighbours of a shared machine; the CPU p95 of the
            # process serving the requests is the comparison that holds between the sizes
            "p95_scaled_over_baseline": scaled_over_baseline(sizes, "p95_ms"),
            "cpu_p95_scaled_over_baseline": scaled_over_baseline(sizes, "cpu_p95_ms"),
        }
        out = RESULTS / f"scale-{args.records}.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        return out

    try:
        big = synthesise(
            tmp / f"kb-scale-{args.records}.jsonl",
            args.records,
            keep_originals=True,
            mutate=args.mutate,
        )
        for path in ([] if args.skip_baseline else [SOURCE]) + [big]:
            sizes.append(run_size(env, path, work, args.requests))
            out = write()
        last = sizes[-1]
        last["rebuild_after_import"] = rebuild_after_import(
            env, work / "matcher-cache", last["records"], last["matcher_build_s"], args.mutate
        )
        out = write()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"CPU p95 over 16.7k: {scaled_over_baseline(sizes, 'cpu_p95_ms')}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
