"""Learning a codebase: the five repositories the dataset was read from, at its revisions.

For each repository the files of the tracked languages that `kb.extract.files` reads are
taken from git with one ``git cat-file --batch`` process (Django from its 6.1.3 sdist, read
in memory: nothing in a source is executed or unpacked to disk), each goes through
`kb.extract.extract.extract_file`, and its sites through `kb.extract.records.to_records`.
Reported per repository and language: files read, sites, records (admissible sites),
recall against the dataset (the share of its records whose file and whitespace-normalised
template the extraction reproduces, counted with multiplicity: a template the dataset has
at three places of a file needs three sites), how many of those reproduced records have
the dataset's very ``messagePattern`` (the extractor's notation and `kb.extract.records`
agreeing with the dataset's), extra records (beyond the dataset's), and
per repository the seconds of each phase and the peak memory of the process that learned
it (each repository runs in a child process of its own, so the peak is that learn's).
A seeded sample of 100 extra records and of the misses per repository is kept in the
result file, for the hand-checked precision and the causes of misses.

Run: ``.venv/bin/python benchmarks/bench_learn.py [--only NAME] [--results=DIR]``. Writes
``benchmarks/results/learn.json``. Where the sources are, with the reason printed and
written when one is absent:

- ``KB_MIRRORS_DIR``: a directory of git mirrors, ``owner+name/repo`` each (default:
  ``.mirror`` beside the clone's parent directory, else beside the clone);
- ``KB_DJANGO_SDIST``: Django's 6.1.3 sdist; without it, ``pip download`` fetches it into
  ``.cache/bench_learn`` (skipped when the index cannot be reached);
- ``KB_DATASET_DIR``: the dataset (``records-all.jsonl``), as for the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kb.extract.extract import NotText, extract_file  # noqa: E402
from kb.extract.files import language_of, skip_reason  # noqa: E402
from kb.extract.identity import normalise_template  # noqa: E402
from kb.extract.records import to_records  # noqa: E402

DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
# Beside the clone's parent (a worktree in a folder of worktrees), else beside the clone.
MIRRORS_DIR = Path(
    os.environ.get("KB_MIRRORS_DIR")
    or next(
        (p for p in (REPO.parent.parent / ".mirror", REPO.parent / ".mirror") if p.is_dir()),
        REPO.parent / ".mirror",
    )
)
DJANGO_SDIST = os.environ.get("KB_DJANGO_SDIST")
CACHE = REPO / ".cache" / "bench_learn"  # git-ignored
RESULTS = HERE / "results"
HEAD_BYTES = 2048
SAMPLE = 100

# (repository, revision the dataset read it at, where it comes from)
SOURCES: tuple[tuple[str, str, str], ...] = (
    ("risingwavelabs/risingwave", "448c6570b1b9d636736708340f61a85900c2b7d7", "git"),
    ("apache/kafka", "1eb7644349cb07139d6a3c1ad1986979647cac99", "git"),
    ("etcd-io/etcd", "c34dc7ee0048fd2bcc44d50beff002e5e8069b69", "git"),
    ("sqlalchemy/sqlalchemy", "f35da7e2b9349a08b8de1f6bd3b07c8bf8616790", "git"),
    ("django/django", "6.1.3", "sdist"),
)


class Unavailable(Exception):
    """The source is not on this machine: the repository is skipped with this reason."""


# --- reading a source ------------------------------------------------------------------
def wanted(path: str, skipped: Counter[str]) -> bool:
    """Is ``path`` read? Files the path alone rules out are never read (and counted)."""
    why = skip_reason(path)
    if why:
        skipped[why] += 1
    return language_of(path) is not None and why is None


def git_blobs(mirror: Path, revision: str, skipped: Counter[str]) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every tracked-language file at ``revision`` its path does not rule
    out, through one ``git cat-file --batch`` (arguments as a list, never a shell string)."""
    listing = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "-r", "-z", "--full-tree", revision],
        capture_output=True,
        check=True,
    ).stdout
    blobs: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and language_of(path) and wanted(path, skipped):
            blobs.append((path, sha.decode()))
    batch = subprocess.Popen(
        ["git", "-C", str(mirror), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    stdin, stdout = batch.stdin, batch.stdout
    if stdin is None or stdout is None:
        raise RuntimeError("git cat-file --batch without pipes")
    try:
        for path, sha in blobs:
            stdin.write(sha.encode() + b"\n")
            stdin.flush()
            header = stdout.readline().split()
            if len(header) != 3:
                continue  # "<sha> missing"
            data = stdout.read(int(header[2]))
            stdout.read(1)  # the newline after the contents
            yield path, data
    finally:
        stdin.close()
        batch.wait()


def django_sdist() -> Path:
    if DJANGO_SDIST:
        path = Path(DJANGO_SDIST)
        if not path.is_file():
            raise Unavailable(f"KB_DJANGO_SDIST={path} is not a file")
        return path
    found = sorted(CACHE.glob("[Dd]jango-6.1.3.tar.gz"))
    if found:
        return found[0]
    CACHE.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    fetched = subprocess.run(
        [*pip, "--dest", str(CACHE), "django==6.1.3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = sorted(CACHE.glob("[Dd]jango-6.1.3.tar.gz"))
    if fetched.returncode or not found:
        last = (fetched.stderr.strip().splitlines() or ["no sdist"])[-1]
        raise Unavailable(f"pip download django==6.1.3 failed: {last[:200]}")
    return found[0]


def sdist_files(archive: Path, skipped: Counter[str]) -> Iterator[tuple[str, bytes]]:
    """(path inside the project, bytes) of the sdist's tracked-language regular files its
    path does not rule out, read from the archive in memory."""
    with tarfile.open(archive) as tar:
        for member in tar:
            if not member.isreg():
                continue
            _, _, path = member.name.partition("/")
            if not language_of(path) or not wanted(path, skipped):
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                yield path, handle.read()


def files_of(
    repo: str, revision: str, kind: str, skipped: Counter[str]
) -> Iterator[tuple[str, bytes]]:
    if kind == "sdist":
        return sdist_files(django_sdist(), skipped)
    mirror = MIRRORS_DIR / repo.replace("/", "+") / "repo"
    if not (mirror / "HEAD").is_file() and not (mirror / ".git").exists():
        raise Unavailable(f"no git mirror at {mirror} (set KB_MIRRORS_DIR)")
    check = subprocess.run(
        ["git", "-C", str(mirror), "cat-file", "-e", f"{revision}^{{commit}}"],
        capture_output=True,
    )
    if check.returncode:
        raise Unavailable(f"{mirror} has no commit {revision}")
    return git_blobs(mirror, revision, skipped)


# --- the dataset -----------------------------------------------------------------------
def dataset_keys(repo: str) -> tuple[Counter[tuple[str, str]], dict[tuple[str, str], set[str]]]:
    """How many dataset records each (file, template) of ``repo`` has, and their patterns."""
    keys: Counter[tuple[str, str]] = Counter()
    patterns: dict[tuple[str, str], set[str]] = defaultdict(set)
    with (DATASET_DIR / "records-all.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)["record"]
            if record["repo"] == repo:
                key = (record["filePath"], normalise_template(record["errorMessage"]))
                keys[key] += 1
                patterns[key].add(record["messagePattern"])
    return keys, patterns


# --- one repository ---------------------------------------------------------------------
def learn(repo: str, revision: str, kind: str) -> dict[str, Any]:
    """Everything measured for one repository (run in a child process of its own)."""
    read_s = extract_s = records_s = 0.0
    per_language: dict[str, Counter[str]] = defaultdict(Counter)
    skipped: Counter[str] = Counter()
    found: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], str] = {}
    patterns: dict[tuple[str, str], set[str]] = defaultdict(set)
    at = datetime.now(UTC)
    source = files_of(repo, revision, kind, skipped)  # fetching an sdist is not learning it
    started = time.perf_counter()
    while True:
        tick = time.perf_counter()
        item = next(source, None)
        read_s += time.perf_counter() - tick
        if item is None:
            break
        path, data = item
        language = language_of(path) or "other"
        why = skip_reason(path, data[:HEAD_BYTES])
        if why:
            skipped[why] += 1
            continue
        tick = time.perf_counter()
        try:
            sites = extract_file(path, data)
        except NotText:
            skipped["not text"] += 1
            continue
        extract_s += time.perf_counter() - tick
        tick = time.perf_counter()
        lines = data.decode("utf-8").split("\n")
        made = to_records(sites, repo=repo, revision=revision, lines=lines, url=None, at=at)
        records_s += time.perf_counter() - tick
        tally = per_language[language]
        tally["files"] += 1
        tally["sites"] += len(sites)
        tally["records"] += len(made)
        for record in made:
            key = (record["filePath"], normalise_template(record["errorMessage"]))
            found[key] += 1
            patterns[key].add(record["messagePattern"])
            where.setdefault(key, f"{record['filePath']}:{record['lineNumber']}")
    seconds = time.perf_counter() - started
    expected, expected_patterns = dataset_keys(repo)
    misses: list[dict[str, Any]] = []
    extras: list[dict[str, Any]] = []
    for key, count in expected.items():
        got = min(count, found.get(key, 0))
        tally = per_language[language_of(key[0]) or "other"]
        tally["dataset_records"] += count
        tally["reproduced"] += got
        if got and patterns[key] <= expected_patterns[key]:
            tally["same_pattern"] += got
        if got < count:
            misses.append({"file": key[0], "template": key[1], "missing": count - got})
    for key, count in found.items():
        extra = count - expected.get(key, 0)
        if extra > 0:
            per_language[language_of(key[0]) or "other"]["extra"] += extra
            extras.append({"site": where[key], "template": key[1]})
    rng = random.Random(25)
    total = Counter[str]()
    for tally in per_language.values():
        total.update(tally)
    return {
        "name": repo,
        "revision": revision,
        "status": "ok",
        "seconds": round(seconds, 2),
        "read_s": round(read_s, 2),
        "extract_s": round(extract_s, 2),
        "records_s": round(records_s, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "skipped": dict(sorted(skipped.items())),
        "languages": [_row(name, tally) for name, tally in sorted(per_language.items())],
        "all": _row("all", total),
        "extra_sample": rng.sample(extras, min(SAMPLE, len(extras))),
        "miss_sample": rng.sample(misses, min(SAMPLE, len(misses))),
    }


def _row(name: str, tally: Counter[str]) -> dict[str, Any]:
    expected = tally["dataset_records"]
    return {
        "name": name,
        "files": tally["files"],
        "sites": tally["sites"],
        "records": tally["records"],
        "dataset_records": expected,
        "reproduced": tally["reproduced"],
        "recall": round(tally["reproduced"] / expected, 4) if expected else None,
        # of the reproduced, how many have the dataset's very messagePattern
        "same_pattern": tally["same_pattern"],
        "extra": tally["extra"],
    }


def run_child(repo: str, revision: str, kind: str) -> dict[str, Any]:
    """`learn` in a fresh interpreter, so each repository's peak memory is its own."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        done = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                repo,
                "--child-out",
                str(out),
            ],
            cwd=REPO,
        )
        if done.returncode or not out.is_file():
            return {
                "name": repo,
                "revision": revision,
                "status": f"failed (exit {done.returncode})",
            }
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result


def one(repo: str) -> dict[str, Any]:
    revision, kind = next((rev, kind) for name, rev, kind in SOURCES if name == repo)
    try:
        return learn(repo, revision, kind)
    except Unavailable as absent:
        return {"name": repo, "revision": revision, "status": "skipped", "reason": str(absent)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a repository (owner/name) to learn")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    parser.add_argument("--quick", action="store_true", help="accepted, as by every benchmark")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.child_out.write_text(json.dumps(one(args.child)), encoding="utf-8")
        return 0
    if not (DATASET_DIR / "records-all.jsonl").is_file():
        print(f"bench_learn: no {DATASET_DIR / 'records-all.jsonl'} (set KB_DATASET_DIR)")
        return 0
    wanted = [s for s in SOURCES if not args.only or s[0] in args.only]
    loadavg = list(os.getloadavg())
    repos = []
    for repo, revision, kind in wanted:
        result = run_child(repo, revision, kind)
        repos.append(result)
        row = result.get("all") or {}
        if result["status"] != "ok":
            print(f"{repo}: {result['status']} ({result.get('reason', '')})", flush=True)
            continue
        print(
            f"{repo}: {row['files']} files, {row['records']} records, recall {row['recall']}, "
            f"{row['extra']} extra, {result['seconds']} s, peak {result['peak_rss_mib']} MiB",
            flush=True,
        )
    result = {
        "benchmark": "Learning a codebase",
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpus": os.cpu_count(), "loadavg_at_start": loadavg},
        "repos": repos,
    }
    out = args.results / "learn.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
