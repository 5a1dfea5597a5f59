"""Learn jobs end to end: ``manage.py learn`` on the dataset's repositories, timed whole.

Issue 25's speed goals, on this machine: learning Kafka at its dataset commit in at most
30 s, RisingWave at its dataset commit in at most 20 s, and RisingWave again 200 commits
on in at most 5 s, reading only the files that changed. Each job is the management
command in a child process of its own (``call_command("learn", ...)`` after
``django.setup()``, exactly what ``manage.py learn`` runs), on a scratch SQLite database
migrated by this benchmark in a temporary directory, so the figures are the job's:
reading the files through git, extraction, the records through the importer, the sites,
and the matcher build and publish the ``learned`` signal runs after the learn
(``kb.curation.apps``), which the command waits for. Reported per job: wall seconds of
the child (interpreter and Django start included), the command's own ``seconds`` (the
learn, without the matcher), the matcher build and publish after it, files read, sites,
records created / updated / unchanged / gone, and the child's peak RSS (and that of the
git processes it ran).

The mirrors hold no commit after RisingWave's dataset commit, so "200 commits later" is
measured the other way round with the same diff: RisingWave is learned at the commit 200
first-parent commits before its dataset commit, then again at the dataset commit (the
second learn timed: git's diff over those 200 commits decides what is read).

Then (unless ``--no-paste``) the paste path's figures (``bench_pages``' paste, record page and
search requests; the matcher on ``matcher_data``'s lines and a 1 MiB log) with the
dataset imported (``KB_DATASET_DIR``), and again with the five repositories learned into
the same database at their dataset revisions (four mirrors, Django from its 6.1.3 sdist,
``KB_DJANGO_SDIST``): each figure's best of two rounds per database, measured in turns,
and their ratio (goal: at most 1.1).

In the same run, the floor the issue sets beside them: the same files of Kafka's Java and
RisingWave's Rust (those the learn reads: non-test, not vendored or generated, under the
size limit) read with one ``git cat-file --batch`` and parsed with tree-sitter plus one
query, in this process.

Run: ``.venv/bin/python benchmarks/bench_learn_jobs.py [--only NAME] [--no-paste] [--results=DIR]``.
Writes ``benchmarks/results/learn-jobs.json``. The mirrors are found through
``KB_MIRRORS_DIR`` (``owner+name/repo`` each; the same variable and default as
``bench_learn.py``); a job whose mirror is absent is skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for folder in (REPO, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from places import DATASET_DIR, MIRRORS_DIR, mirror  # noqa: E402

RESULTS = HERE / "results"
RESULT_FILE = "learn-jobs.json"
STEP_COMMITS = 200

KAFKA = ("apache/kafka", "1eb7644349cb07139d6a3c1ad1986979647cac99")
RISINGWAVE = ("risingwavelabs/risingwave", "448c6570b1b9d636736708340f61a85900c2b7d7")


def peak_mib(kib: float) -> float:
    return round(kib / 1024, 1)  # ru_maxrss is in KiB on Linux


# --- the child: one learn, as manage.py learn runs it ------------------------------------
def child(location: str, revision: str, repo: str) -> None:
    """Run ``learn`` in this process and print one JSON line: the command's object, the
    seconds of Django's start and of the matcher build the ``learned`` signal ran, and the
    peak RSS of this process and of the git processes it ran."""
    started = time.perf_counter()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
    import django

    django.setup()
    setup_s = time.perf_counter() - started
    import io

    from django.core.management import call_command

    import kb.curation.tasks as curation_tasks

    matcher: dict[str, float] = {"seconds": 0.0, "builds": 0}
    publish = curation_tasks.publish_matcher_safely

    def timed_publish() -> int | None:
        # the receiver looks the function up on its module when the signal is sent
        t0 = time.perf_counter()
        try:
            return publish()
        finally:
            matcher["seconds"] += time.perf_counter() - t0
            matcher["builds"] += 1

    curation_tasks.publish_matcher_safely = timed_publish  # type: ignore[assignment]
    out, err = io.StringIO(), io.StringIO()
    call_command("learn", location, rev=revision, repo=repo, json=True, stdout=out, stderr=err)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    git = resource.getrusage(resource.RUSAGE_CHILDREN)
    own, kids = usage.ru_maxrss, git.ru_maxrss
    # CPU seconds of the job (this process and its git processes): on a machine others
    # share, what the job cost without the waits for a core that wall time includes
    cpu = usage.ru_utime + usage.ru_stime + git.ru_utime + git.ru_stime
    print(
        json.dumps(
            {
                "result": result,
                "setup_s": round(setup_s, 3),
                "matcher_s": round(matcher["seconds"], 3),
                "matcher_builds": matcher["builds"],
                "cpu_s": round(cpu, 2),
                "peak_rss_mib": peak_mib(own),
                "git_peak_rss_mib": peak_mib(kids),
            }
        )
    )


# --- the parent: jobs on scratch databases -----------------------------------------------
def migrated_template(workdir: Path) -> Path:
    """A migrated empty SQLite database, copied for each job (migrating once)."""
    path = workdir / "template.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}"}
    subprocess.run([sys.executable, str(REPO / "manage.py"), "migrate", "-v0"], env=env, check=True)
    return path


def fresh_db(template: Path, workdir: Path, name: str) -> str:
    target = workdir / f"{name}.sqlite3"
    shutil.copyfile(template, target)
    return f"sqlite:///{target}"


def run_job(
    name: str, location: Path, revision: str, repo: str, database_url: str, workdir: Path,
    goal: float | None, since: str = "",
) -> dict[str, Any]:  # fmt: skip
    """One learn in a child process, timed from its spawn to its exit."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "KB_MATCHER_CACHE_DIR": str(workdir / "matcher-cache"),
        "KB_SOURCES_CACHE_DIR": str(workdir / "sources-cache"),
    }
    command = [sys.executable, __file__, "--child", str(location), revision, repo]
    print(f"{name}: learn {repo} at {revision[:12]} ...", flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    row: dict[str, Any] = {
        "name": name, "repo": repo, "revision": revision, "since": since, "goal_s": goal,
    }  # fmt: skip
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {**row, "status": "failed", "reason": tail[:300]}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    result = report.pop("result")
    row.update(
        status="ok",
        seconds=round(wall, 2),
        learn_s=result.get("seconds"),
        files_read=result.get("files_read"),
        sites=result.get("sites"),
        created=result.get("created"),
        updated=result.get("updated"),
        unchanged=result.get("unchanged"),
        gone=result.get("gone"),
        **report,
    )
    if goal is not None:
        row["met"] = wall <= goal
    print(f"  {row['seconds']} s wall, learn {row['learn_s']} s, matcher {row['matcher_s']} s, "
          f"{row['files_read']} files, peak {row['peak_rss_mib']} MiB", flush=True)  # fmt: skip
    return row


def step_base(location: Path, revision: str) -> str | None:
    """The commit ``STEP_COMMITS`` first-parent commits before ``revision``."""
    done = subprocess.run(
        ["git", f"--git-dir={location}", "rev-parse", "--verify", "--quiet",
         "--end-of-options", f"{revision}~{STEP_COMMITS}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() or None


def jobs(workdir: Path, only: str | None) -> list[dict[str, Any]]:
    template = migrated_template(workdir)
    rows: list[dict[str, Any]] = []
    plan = [("kafka", KAFKA, 30.0), ("risingwave", RISINGWAVE, 20.0)]
    for name, (repo, revision), goal in plan:
        if only and only not in name:
            continue
        location = mirror(repo)
        if not location.is_dir():
            rows.append({"name": name, "repo": repo, "revision": revision, "goal_s": goal,
                         "status": "skipped", "reason": f"no mirror at {location}"})  # fmt: skip
            continue
        db = fresh_db(template, workdir, name)
        rows.append(run_job(name, location, revision, repo, db, workdir, goal))
    if only and only not in "risingwave-step":
        return rows
    repo, revision = RISINGWAVE
    location = mirror(repo)
    base = step_base(location, revision) if location.is_dir() else None
    name = f"risingwave +{STEP_COMMITS} commits"
    if base is None:
        why = f"no mirror at {location}" if not location.is_dir() else "no commit to step from"
        rows.append({"name": name, "repo": repo, "revision": revision, "goal_s": 5.0,
                     "status": "skipped", "reason": why})  # fmt: skip
        return rows
    db = fresh_db(template, workdir, "risingwave-step")
    first = run_job(f"risingwave at -{STEP_COMMITS}", location, base, repo, db, workdir, None)
    rows.append(first)
    if first.get("status") == "ok":
        rows.append(run_job(name, location, revision, repo, db, workdir, 5.0, since=base))
    return rows


# --- the floor: git cat-file --batch, then tree-sitter plus one query ---------------------
FLOOR_QUERIES = {
    "java": "(throw_statement) @site (method_invocation name: (identifier) @call)",
    "rust": "(macro_invocation) @site (call_expression) @call",
}


def floor(name: str, repo: str, revision: str, language: str) -> dict[str, Any]:
    """The files of ``language`` the learn reads, read and parsed with nothing else."""
    from tree_sitter import Language, Parser, Query, QueryCursor

    from kb.extract.extract import MAX_FILE_BYTES
    from kb.extract.files import language_of, skip_reason
    from kb.sources.readers.git import GitRepository, git_dir_of

    row: dict[str, Any] = {"name": name, "language": language, "revision": revision}
    location = mirror(repo)
    if not location.is_dir():
        return {**row, "status": "skipped", "reason": f"no mirror at {location}"}
    repository = GitRepository(git_dir_of(location))
    entries, _missing = repository.files(revision)
    wanted = [
        e
        for e in entries
        if language_of(e.path) == language
        and skip_reason(e.path) is None
        and e.size <= MAX_FILE_BYTES
    ]
    started = time.perf_counter()
    blobs = [data for _entry, data in repository.blobs(wanted)]
    read_s = time.perf_counter() - started
    grammar: Callable[[], object]
    if language == "java":
        import tree_sitter_java

        grammar = tree_sitter_java.language
    else:
        import tree_sitter_rust

        grammar = tree_sitter_rust.language
    lang = Language(grammar())
    parser, query = Parser(lang), Query(lang, FLOOR_QUERIES[language])
    captured = 0
    started = time.perf_counter()
    for data in blobs:
        tree = parser.parse(data)
        captured += sum(len(v) for v in QueryCursor(query).captures(tree.root_node).values())
    parse_s = time.perf_counter() - started
    print(f"floor {name} {language}: {len(blobs)} files, read {read_s:.2f} s, "
          f"parse+query {parse_s:.2f} s", flush=True)  # fmt: skip
    return {
        **row,
        "status": "ok",
        "files": len(blobs),
        "mib": round(sum(map(len, blobs)) / 2**20, 1),
        "read_s": round(read_s, 2),
        "parse_query_s": round(parse_s, 2),
        "seconds": round(read_s + parse_s, 2),
        "captures": captured,
    }


# --- the paste path with the learned records beside the dataset's -------------------------
DJANGO_SDIST = Path(
    os.environ.get("KB_DJANGO_SDIST") or REPO.parent.parent / "notes/pkgs/django-6.1.3.tar.gz"
)
PASTE_REPOS: tuple[tuple[str, str], ...] = (
    RISINGWAVE,
    KAFKA,
    ("etcd-io/etcd", "c34dc7ee0048fd2bcc44d50beff002e5e8069b69"),
    ("sqlalchemy/sqlalchemy", "f35da7e2b9349a08b8de1f6bd3b07c8bf8616790"),
)
PASTE_GOAL = 1.1
PASTE_ROUNDS = 2  # each database measured this many times, in turns
PASTE_REQUESTS = 100
MATCHER_LINES = 2000


def measure_paste() -> None:
    """In a child on the database given: the paste path's figures, printed as one JSON
    line. The same requests and lines each time (the dataset's records pick them), so two
    runs differ only by the records loaded."""
    import gc
    import random

    import bench_pages  # django.setup() on this process's DATABASE_URL
    import timing
    from django.conf import settings
    from django.test import Client
    from matcher_data import load_specs, make_lines, make_log

    from kb.matching.holder import get_matcher
    from kb.records.models import ErrorRecord

    settings.DEBUG = False
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    figures: dict[str, float] = {"records": ErrorRecord.objects.count()}
    started = time.perf_counter()
    matcher = get_matcher()
    figures["matcher loaded: s"] = round(time.perf_counter() - started, 3)
    specs = load_specs()  # the dataset's, for the lines: the same in both runs
    rng = random.Random(4)
    records = [f"/records/{spec.key}/" for spec in rng.sample(specs, 50)]
    paste, hx = bench_pages.paste_text(), {"HTTP_HX_REQUEST": "true"}
    cases = [
        ("paste POST /match/ 8 KiB (htmx)", [("post", "/match/", {"data": {"text": paste}, **hx})]),
        ("paste POST /match/ 8 KiB (page)", [("post", "/match/", {"data": {"text": paste}})]),
        ("record page", [("get", url, {}) for url in records]),
        ("search", [("get", "/records/", {"data": {"q": q}}) for q in bench_pages.SEARCHES]),
    ]
    client = Client()
    for name, requests in cases:
        row = bench_pages.run_case(client, name, requests, PASTE_REQUESTS, None)
        figures[f"{name}: p50 ms"] = row["p50_ms"]
        figures[f"{name}: p95 ms"] = row["p95_ms"]
        figures[f"{name}: CPU p50 ms"] = row["cpu_p50_ms"]
    gc.collect()
    lines = make_lines(specs, MATCHER_LINES)
    for line in lines[:50]:
        matcher.match(line)
    each = timing.time_each("matcher line", matcher.match, lines)
    figures["matcher line: p50 us"] = round(each.wall.median() * 1e6, 1)
    figures["matcher line: CPU p99 us"] = round(each.cpu.percentile(99) * 1e6, 1)
    log = make_log(specs, 1.0)
    whole = timing.time_each("matcher 1 MiB log", matcher.match, [log] * 5)
    figures["matcher 1 MiB log: CPU ms"] = round(whole.cpu.median() * 1e3, 1)
    print(json.dumps(figures))


def _child_env(database_url: str, workdir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "KB_DATASET_DIR": str(DATASET_DIR),
        "KB_MATCHER_CACHE_DIR": str(workdir / "matcher-cache"),
        "KB_SOURCES_CACHE_DIR": str(workdir / "sources-cache"),
    }


def _measure(database_url: str, workdir: Path) -> dict[str, float]:
    print("paste path figures ...", flush=True)
    done = subprocess.run(
        [sys.executable, __file__, "--measure-paste"],
        env=_child_env(database_url, workdir), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def paste_phase(workdir: Path) -> dict[str, Any]:
    """The dataset imported, its paste figures; the five repositories learned into the
    same database, the same figures again; and their ratios."""
    dataset = DATASET_DIR / "records-all.jsonl"
    row: dict[str, Any] = {"goal_ratio": PASTE_GOAL}
    if not dataset.is_file():
        return {**row, "status": "skipped", "reason": f"no dataset at {dataset}"}
    database_url = f"sqlite:///{workdir / 'paste.sqlite3'}"
    env = _child_env(database_url, workdir)
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
    subprocess.run([*manage, "createcachetable"], env=env, check=True)
    print("importing the dataset ...", flush=True)
    started = time.perf_counter()
    subprocess.run(
        [*manage, "import_records", str(dataset)], env=env, check=True, capture_output=True
    )
    row["import_s"] = round(time.perf_counter() - started, 1)
    # The dataset alone stays in a copy, measured again beside the learned database in
    # turns: a neighbour's burst on this shared machine then lands on both sides alike.
    alone = workdir / "dataset-only.sqlite3"
    shutil.copyfile(workdir / "paste.sqlite3", alone)
    sources = [(mirror(repo), revision, repo) for repo, revision in PASTE_REPOS]
    sources.append((DJANGO_SDIST, "", "django/django"))
    learns = []
    for location, revision, repo in sources:
        if not location.exists():
            learns.append({"repo": repo, "status": "skipped", "reason": f"no {location}"})
            continue
        job = run_job(repo, location, revision, repo, database_url, workdir, None)
        learns.append({**job, "revision": revision or location.name})
    rounds: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _round in range(PASTE_ROUNDS):
        rounds["before"].append(_measure(f"sqlite:///{alone}", workdir))
        rounds["after"].append(_measure(database_url, workdir))
    # each figure's best round: the least disturbed by other work on the machine
    before = {k: min(r[k] for r in rounds["before"]) for k in rounds["before"][0]}
    after = {k: min(r[k] for r in rounds["after"]) for k in rounds["after"][0]}
    row["learns"] = learns
    row["rounds"] = PASTE_ROUNDS
    row["records"] = {
        "dataset": before.pop("records"),
        "with_learned": after.pop("records"),
    }
    row["figures"] = [
        {
            "figure": name,
            "dataset": value,
            "with_learned": after.get(name),
            "ratio": round(after[name] / value, 2) if value and name in after else None,
        }
        for name, value in before.items()
    ]
    row["status"] = "ok"
    return row


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return 0
    if argv[:1] == ["--measure-paste"]:
        sys.path.insert(0, str(HERE))
        measure_paste()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="kafka, risingwave or risingwave-step")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    parser.add_argument(
        "--no-paste", action="store_true",
        help="leave out the paste path's figures with the five repositories learned",
    )  # fmt: skip
    args, _ = parser.parse_known_args(argv)  # run_all.py passes every script its flags
    data: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_at_start": list(os.getloadavg()),
            "python_version": platform.python_version(),
            "platform": platform.platform(),
        },
        "database": "sqlite",
        "mirrors": str(MIRRORS_DIR),
    }
    with tempfile.TemporaryDirectory(prefix="bench-learn-jobs-") as tmp:
        data["jobs"] = jobs(Path(tmp), args.only)
        if not args.no_paste:
            data["paste"] = paste_phase(Path(tmp))
    data["floor"] = [
        floor("kafka", *KAFKA, "java"),
        floor("risingwave", *RISINGWAVE, "rust"),
    ]
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / RESULT_FILE
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
