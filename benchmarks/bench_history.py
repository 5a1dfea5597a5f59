"""Release histories learned end to end: ``manage.py learn --releases`` timed whole.

Issue 26: SQLAlchemy's tags from ``rel_1_3_0`` on and Kafka's from 2.0 on (their git
mirrors, the walk ending at each one's dataset commit) and Django's releases from 1.11 on
(the package index), learned one after the other into a database that holds the dataset
(``KB_DATASET_DIR``'s ``records-all.jsonl`` imported first); then, for the scale figure,
every release of etcd (``v*``: the main module's tags, not the submodules') and of
SQLAlchemy (``rel_*``), each into an empty database of its own. Each learn is the
management command in a child process (``call_command("learn", ...)`` after
``django.setup()``), on SQLite. Reported per learn: releases walked, wall seconds (the
interpreter's start and the matcher build the learn triggers included), the learn's own
seconds, CPU seconds (with git's), peak RSS, files read, records created / updated,
older wordings recorded (aliases), removed sites kept as records, and the database's
size before and after.

Then the labelled real pastes (``eval-public.jsonl``) go through the app's matcher
(``kb.matching.holder.match_text``) on the dataset's database and on the one with the
three histories learned: per stratum, the share answered right (``exact``: the first match
is an expected record; ``drifted``: the first match, confident, is one, and among the
first three of matches and suggestions; ``absent`` and ``negative``: no match). The
learned database stays at ``/tmp/history-bench.sqlite3`` so that the evaluation can be
run again on it (``--eval-only``).

Run: ``.venv/bin/python benchmarks/bench_history.py [--only NAME] [--no-scale]
[--eval-only] [--results=DIR]``. Writes ``benchmarks/results/history.json``. Mirrors are
found through ``KB_MIRRORS_DIR``; a learn whose mirror (or the index, or the dataset) is
absent is skipped with the reason.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for folder in (REPO, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from places import DATASET_DIR, mirror  # noqa: E402

RESULTS = HERE / "results"
RESULT_FILE = "history.json"
#: The walk's decisions on SQLAlchemy's history, labelled by hand (history_sample.py).
SAMPLE_FILE = "history-sample.jsonl"
KEPT_DB = Path("/tmp/history-bench.sqlite3")

SQLALCHEMY = ("sqlalchemy/sqlalchemy", "f35da7e2b9349a08b8de1f6bd3b07c8bf8616790")
KAFKA = ("apache/kafka", "1eb7644349cb07139d6a3c1ad1986979647cac99")
ETCD = ("etcd-io/etcd", "c34dc7ee0048fd2bcc44d50beff002e5e8069b69")
# (name, source, repo, releases, since, revision): a git source is its repository's mirror,
# its walk ending at the dataset's commit; Django's releases come from the package index,
# named as the dataset names its repository
HISTORIES = [
    ("sqlalchemy from 1.3.0", "", SQLALCHEMY[0], "rel_*", "1.3.0", SQLALCHEMY[1]),
    ("kafka from 2.0", "", KAFKA[0], "*", "2.0", KAFKA[1]),
    ("django from 1.11", "pypi:django", "django/django", ">=1.11", "", ""),
]
SCALE = [
    ("etcd all releases", "", ETCD[0], "v*", "", ETCD[1]),
    ("sqlalchemy all releases", "", SQLALCHEMY[0], "rel_*", "", SQLALCHEMY[1]),
]


def mib(kib: float) -> float:
    return round(kib / 1024, 1)  # ru_maxrss is in KiB on Linux


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
    import django

    django.setup()


# --- the children ---------------------------------------------------------------------
def child_learn(location: str, releases: str, since: str, rev: str, repo: str) -> None:
    """One ``manage.py learn --releases`` in this process; prints one JSON line."""
    started = time.perf_counter()
    _setup()
    from django.core.management import call_command

    import kb.curation.tasks as curation_tasks
    from kb.sources.models import LearnJob

    matcher = {"seconds": 0.0}
    publish = curation_tasks.publish_matcher_safely

    def timed_publish() -> int | None:
        t0 = time.perf_counter()
        try:
            return publish()
        finally:
            matcher["seconds"] += time.perf_counter() - t0

    curation_tasks.publish_matcher_safely = timed_publish
    options: dict[str, Any] = {"releases": releases, "json": True}
    if since:
        options["since"] = since
    if rev:
        options["rev"] = rev
    if repo:
        options["repo"] = repo
    out = io.StringIO()
    call_command("learn", location, stdout=out, stderr=io.StringIO(), **options)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    report = LearnJob.objects.order_by("-id").values_list("report", flat=True).first() or {}
    usage = resource.getrusage(resource.RUSAGE_SELF)
    git = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "result": result,
        "aliases": report.get("aliases"),
        "removed": report.get("removed"),
        "errors": report.get("errors"),
        "matcher_s": round(matcher["seconds"], 2),
        "setup_to_end_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime + git.ru_utime + git.ru_stime, 2),
        "peak_rss_mib": mib(usage.ru_maxrss),
        "git_peak_rss_mib": mib(git.ru_maxrss),
    }))  # fmt: skip


def _acceptable(case: dict[str, Any], patterns: dict[str, str]) -> set[str]:
    keys = set(case.get("expected") or []) | set(case.get("also_acceptable") or [])
    wanted = {patterns[k] for k in keys if k in patterns}
    return keys | {k for k, p in patterns.items() if p in wanted}


def child_eval() -> None:
    """The public labelled set through the app's matcher on this database: per stratum,
    how many cases and how many answered right; prints one JSON line."""
    _setup()
    from kb.matching.holder import match_text
    from kb.records.models import ErrorRecord

    cases = [json.loads(line) for line in (DATASET_DIR / "eval-public.jsonl").open()]
    patterns = dict(ErrorRecord.objects.values_list("id", "message_pattern"))
    strata: dict[str, dict[str, Any]] = {}
    for case in cases:
        result = match_text(case["text"])
        ok_keys = _acceptable(case, patterns)
        first = result.matches[0].record.pk if result.matches else None
        ranked = [m.record.pk for m in result.matches] + [s.record.pk for s in result.suggestions]
        row = strata.setdefault(case["stratum"], {"cases": 0, "top1": 0, "top3": 0, "none": 0})
        row["cases"] += 1
        row["top1"] += first in ok_keys
        row["top3"] += any(k in ok_keys for k in ranked[:3])
        row["none"] += not result.matches
    print(json.dumps({"strata": strata, "records": ErrorRecord.objects.count()}))


# --- the parent -----------------------------------------------------------------------
def _env(database: Path, workdir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "KB_MATCHER_CACHE_DIR": str(workdir / "matcher-cache"),
        "KB_SOURCES_CACHE_DIR": str(workdir / "sources-cache"),
    }


def _manage(database: Path, workdir: Path, *args: str) -> None:
    subprocess.run([sys.executable, str(REPO / "manage.py"), *args],
                   env=_env(database, workdir), check=True, capture_output=True)  # fmt: skip


def _child(database: Path, workdir: Path, *args: str) -> tuple[dict[str, Any] | None, str]:
    done = subprocess.run([sys.executable, __file__, *args], env=_env(database, workdir),
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return json.loads(done.stdout.strip().splitlines()[-1]), ""


def size_mib(path: Path) -> float:
    total = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
    return round(total / 2**20, 1)


def learn(name: str, source: str, repo: str, releases: str, since: str, rev: str,
          database: Path, workdir: Path) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {"name": name, "repo": repo, "releases_pattern": releases,
                           "since": since, "revision": rev}  # fmt: skip
    if source:
        location = source
    else:
        location = str(mirror(repo))
        if not Path(location).is_dir():
            return {**row, "status": "skipped", "reason": f"no mirror at {location}"}
    before = size_mib(database)
    print(f"{name}: learn {location} --releases {releases} ...", flush=True)
    started = time.perf_counter()
    report, reason = _child(database, workdir, "--child", location, releases, since, rev, repo)
    wall = round(time.perf_counter() - started, 1)
    if report is None:
        return {**row, "status": "failed", "reason": reason, "seconds": wall}
    result = report.pop("result")
    row.update(
        status="ok",
        seconds=wall,
        learn_s=result.get("seconds"),
        releases=result.get("releases"),
        files_read=result.get("files_read"),
        sites=result.get("sites"),
        created=result.get("created"),
        updated=result.get("updated"),
        db_before_mib=before,
        db_after_mib=size_mib(database),
        **report,
    )
    print(f"  {row['releases']} releases, {wall} s wall, learn {row['learn_s']} s, "
          f"CPU {row['cpu_s']} s, created {row['created']}, updated {row['updated']}, "
          f"aliases {row['aliases']}, removed {row['removed']}, "
          f"db {before} -> {row['db_after_mib']} MiB", flush=True)  # fmt: skip
    return row


def evaluate(label: str, database: Path, workdir: Path) -> dict[str, Any]:
    print(f"eval on {label} ...", flush=True)
    report, reason = _child(database, workdir, "--eval")
    if report is None:
        return {"database": label, "status": "failed", "reason": reason}
    rows = []
    for stratum, row in sorted(report["strata"].items()):
        n = row["cases"] or 1
        rows.append({"database": label, "stratum": stratum, "cases": row["cases"],
                     "top1": round(row["top1"] / n, 3), "top3": round(row["top3"] / n, 3),
                     "no_match": round(row["none"] / n, 3)})  # fmt: skip
        print(f"  {stratum}: {rows[-1]}", flush=True)
    return {"database": label, "status": "ok", "records": report["records"], "strata": rows}


def sample_counts(results: Path) -> dict[str, Any]:
    """The mistakes counted on the labelled sample, when there is one."""
    path = results / SAMPLE_FILE
    if not path.is_file():
        return {}
    import history_sample

    counts = history_sample.count(path)
    first = json.loads(path.read_text().splitlines()[0])
    return {"file": f"benchmarks/results/{SAMPLE_FILE}", **first.get("drawn", {}), **counts}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--no-scale", action="store_true")
    parser.add_argument("--eval-only", action="store_true", help=f"evaluate {KEPT_DB} only")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args, _rest = parser.parse_known_args()  # make bench passes every script its flags
    records = DATASET_DIR / "records-all.jsonl"
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "load": os.getloadavg()[0]}  # fmt: skip
    out: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "database": "sqlite",
        "histories": [],
        "scale": [],
        "eval": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-history-") as folder:
        workdir = Path(folder)
        if args.eval_only:
            out["eval"].append(evaluate("dataset + histories", KEPT_DB, workdir))
            print(json.dumps(out["eval"]))
            return
        template = workdir / "template.sqlite3"
        _manage(template, workdir, "migrate", "-v0")
        if not records.is_file():
            out["histories"].append({"status": "skipped", "reason": f"no dataset at {records}"})
        else:
            dataset = workdir / "dataset.sqlite3"
            shutil.copyfile(template, dataset)
            started = time.perf_counter()
            _manage(dataset, workdir, "import_records", str(records))
            out["dataset"] = {"import_s": round(time.perf_counter() - started, 1),
                              "size_mib": size_mib(dataset)}  # fmt: skip
            if not args.only:
                out["eval"].append(evaluate("dataset", dataset, workdir))
            for path in KEPT_DB.parent.glob(KEPT_DB.name + "*"):
                path.unlink()
            shutil.copyfile(dataset, KEPT_DB)
            for name, source, repo, releases, since, rev in HISTORIES:
                if args.only and args.only not in name:
                    continue
                out["histories"].append(
                    learn(name, source, repo, releases, since, rev, KEPT_DB, workdir)
                )
            if not args.only:
                out["eval"].append(evaluate("dataset + histories", KEPT_DB, workdir))
        if not args.no_scale:
            for name, source, repo, releases, since, rev in SCALE:
                if args.only and args.only not in name:
                    continue
                database = workdir / f"{name.replace(' ', '-')}.sqlite3"
                shutil.copyfile(template, database)
                out["scale"].append(
                    learn(name, source, repo, releases, since, rev, database, workdir)
                )
    out["sample"] = sample_counts(args.results)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / RESULT_FILE).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.results / RESULT_FILE}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_learn(*sys.argv[2:7])
    elif len(sys.argv) > 1 and sys.argv[1] == "--eval":
        child_eval()
    else:
        main()
