"""Whole logs at the engine's pace: the raw Hyperscan scan beside `Matcher.match`.

One synthetic log (``logs_data.make_mixed_log``: 1 error line in 100, runs of plain,
``kubectl logs --prefix``, journald and JSON lines) against the real records
(``KB_DATASET_DIR``), measured in one run on the same bytes and the same compiled shards:

* the raw scan: every shard's Hyperscan database over the log's bytes, ids only (a no-op
  per hit), the engine's own pace;
* `Matcher.match` end to end (lines kept, normalise, scan, confirm, rank, report), given
  the same bytes (a log read from a file or an upload), and given the log as text
  (encoded first); before either, once, the database of line literals a matcher
  compiles for its first whole log (`shards.lines_database`, its compile time reported);
* the share of each stage of `Matcher.match`, from one profiled call (cProfile's
  cumulative time of the stage's function over the profiled call's total).

Median CPU time (``process_time``) of ``VALUES`` runs of each side (on a
shared machine the CPU figure is the meaningful one); the ratio is the raw scan's time
over ours (the goal: >= 0.5). Then the peak RSS of matching the log in a fresh process
against one of matching one line, both reading their input whole (the matcher's own).

With ``--big=MB`` (1024 for the done-means figure), a log of that size is written to the
temporary directory (never the repository; removed afterwards), plain and gzip-compressed,
and each is matched in a fresh process as ``manage.py match`` reads a log
(``kb.matching.holder.match_log``: blocks of lines, gzip as a stream, the excerpt of
`kb.engine.logstream` matched; run on the engine alone, without a database): its peak RSS
over the matcher's own (after a one-line match, its database of line literals compiled)
goes into ``big``; ``plain_first_log`` is the same log as the process's first whole log
(the database compiled while it is read).

Run: ``.venv/bin/python benchmarks/bench_logs.py [--quick] [--big=MB] [--results=DIR]``
(``--quick``: an 8 MB log instead of 100 MB). Writes ``logs.json`` into
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import gzip
import json
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from logs_data import make_mixed_log  # noqa: E402 - beside this file
from matcher_data import DATA, load_specs, raw_scan  # noqa: E402

from kb.engine import Matcher  # noqa: E402
from kb.engine.shards import lines_database  # noqa: E402
from tests.engine.envelopes import NAMES, wrap  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
CACHE = REPO / ".cache" / "matcher-bench"
VALUES = 5
# the stages of `Matcher.match`, by the functions that do each (cProfile's key suffix)
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "lines kept (excerpt)": (("kb/engine/logstream.py", "read_excerpt"),),
    "lines kept: line literals found": (("kb/engine/matcher.py", "line_hits"),),
    "normalise": (
        ("kb/engine/normalise/__init__.py", "normalise_excerpt"),
        ("kb/engine/normalise/__init__.py", "normalise_log"),
        ("kb/engine/normalise/__init__.py", "normalise"),
    ),
    "normalise: envelopes": (("kb/engine/normalise/_envelopes.py", "strip_envelopes"),),
    "normalise: joins, JSON, traces": (("kb/engine/normalise/_structure.py", "run"),),
    "scan": (("kb/engine/shards.py", "scan"),),
    "locate lines": (("kb/engine/textmap.py", "locate_lines"),),
    "confirm": (("kb/engine/candidates.py", "confirm_hits"),),
    "context": (("kb/engine/evidence.py", "read_context"),),
    "rank and report": (("kb/engine/matcher.py", "_report"),),
}
PASTE_REPEAT = 200  # one-line matches profiled together, for shares of a stable total


def envelope_top1(m: Matcher) -> dict[str, object]:
    """The public labelled set's exact cases, clean and passed through each envelope: the
    share whose first match is an acceptable record (the bar: every envelope within one
    point of the clean set; as tests/engine/test_envelopes_eval.py, in one run here)."""
    with (DATA / "eval-public.jsonl").open(encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh if line.strip()]
    cases = [c for c in cases if c["stratum"] == "exact"]
    with (DATA / "records-all.jsonl").open(encoding="utf-8") as fh:
        records = [json.loads(line)["record"] for line in fh if line.strip()]
    pattern = {r["id"]: r["messagePattern"] for r in records}
    by_pattern: dict[str, set[str]] = {}
    for k, p in pattern.items():
        by_pattern.setdefault(p, set()).add(k)

    def acceptable(case: dict) -> set[str]:
        keys = set(case["expected"]) | set(case.get("also_acceptable") or [])
        return keys.union(*(by_pattern[pattern[k]] for k in keys if k in pattern))

    def top1(name: str | None) -> float:
        hits = 0
        for case in cases:
            rep = m.match(case["text"] if name is None else wrap(case["text"], name))
            hits += bool(rep.matches) and rep.matches[0].key in acceptable(case)
        return round(hits / len(cases), 4)

    clean = top1(None)
    by_envelope = {name: top1(name) for name in NAMES}
    worst = min(by_envelope.values())
    return {
        "cases": len(cases),
        "clean": clean,
        "by_envelope": by_envelope,
        "worst_drop_points": round((clean - worst) * 100, 1),
        "goal": "worst_drop_points <= 1",
    }


def cpu_median(func, values: int = VALUES) -> float:
    out = []
    for _ in range(values):
        gc.collect()
        t = time.process_time()
        func()
        out.append(time.process_time() - t)
    out.sort()
    return out[len(out) // 2]


def shares(m: Matcher, text: str | bytes, repeat: int = 1) -> dict[str, float]:
    """Share of each stage in ``repeat`` matches of ``text`` (cumulative time of the
    stage's functions over `Matcher.match`'s; a stage inside another one, such as the scan
    that chooses the kept lines inside the excerpt, is counted in both)."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(repeat):
        m.match(text)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    cum: dict[str, float] = {}
    total = 0.0
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.items():
        if name == "match" and file.endswith("kb/engine/matcher.py"):
            total = ct
        for stage, funcs in STAGES.items():
            if any(name == f and file.endswith(suffix) for suffix, f in funcs):
                cum[stage] = cum.get(stage, 0.0) + ct
    out = {k: round(v / total, 3) for k, v in cum.items()} if total else {}
    out["other"] = round(max(0.0, 1 - sum(out.values())), 3)
    return out


# A child's start: the matcher built and warmed, then its peak RSS (VmHWM) reset
# (clear_refs 5), so that the peak it reports is the match's, not the build's.
_CHILD_START = """
import json, os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")
sys.path.insert(0, {repo!r}); sys.path.insert(0, {bench!r})
from matcher_data import load_specs
from kb.engine import Matcher
from pathlib import Path
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
m = Matcher.build(load_specs(), cache_dir=Path({cache!r}), with_similarity=False)
if {lines_first}:  # the matcher's database of line literals, else its first whole log's
    m.line_hits(b"")
reset()
m.match("warm up: connection refused")
before = hwm()
reset()
"""

# the log read whole
_RSS_CHILD = (
    _CHILD_START
    + """
text = Path(sys.argv[1]).read_bytes().decode("utf-8", "replace")
m.match(text)
print(before, hwm())
"""
)


# the same, reading the file as `manage.py match` does: in blocks, gunzipped as a stream
_STREAM_CHILD = (
    _CHILD_START
    + """
from kb.engine.logstream import match_excerpt, read_excerpt
from kb.http import gunzip_blocks
def blocks(fh):
    while block := fh.read(1 << 20):
        yield block
t = time.process_time()
with open(sys.argv[1], "rb") as fh:
    excerpt = read_excerpt(m, gunzip_blocks(blocks(fh), "log", 1 << 40))
    rep = match_excerpt(m, excerpt)
cpu = time.process_time() - t
print(before, hwm(), cpu, len(rep.answers), excerpt.length, excerpt.size)
print(json.dumps(rep.notes))
"""
)


def big_log(path: Path, mb: int, piece: str) -> None:
    """``mb`` MB of log at ``path``: ``piece`` (a synthetic log) again and again."""
    data = piece.encode("utf-8")
    left = mb * 2**20
    with path.open("wb") as fh:
        while left > 0:
            fh.write(data[:left])
            left -= len(data)


def stream_rss(path: Path, lines_first: bool = True) -> dict[str, float | int]:
    """Peak RSS of matching ``path`` read as `manage.py match` reads it (see the doc); the
    matcher's own with its database of line literals, unless not ``lines_first`` (then
    the log is the process's first whole log, which compiles it)."""
    code = _STREAM_CHILD.format(
        repo=str(REPO), bench=str(REPO / "benchmarks"), cache=str(CACHE), lines_first=lines_first
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    first, notes = out.stdout.splitlines()[-2:]
    before, after, cpu, answers, kept, size = first.split()
    return {
        "log_mb": round(int(size) / 2**20, 1),
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "rss_mb_one_line": round(int(before) / 1024, 1),
        "rss_mb_log": round(int(after) / 1024, 1),
        "rss_mb_growth": round((int(after) - int(before)) / 1024, 1),
        "goal": "rss_mb_growth <= 300",
        "cpu_s": round(float(cpu), 1),
        "mb_s": round(int(size) / 2**20 / float(cpu), 1),
        "answers": int(answers),
        "excerpt_share": round(int(kept) / int(size), 3),
        "notes": json.loads(notes),
    }


def peak_rss_mb(path: Path) -> tuple[float, float]:
    """(peak RSS MB after a one-line match, peak RSS MB after matching ``path``)."""
    code = _RSS_CHILD.format(
        repo=str(REPO), bench=str(REPO / "benchmarks"), cache=str(CACHE), lines_first=True
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    before, after = map(int, out.stdout.split())
    return round(before / 1024, 1), round(after / 1024, 1)


def measure_big(mb: int, piece: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        big_log(path, mb, piece)
        out: dict[str, object] = {
            "plain": stream_rss(path),
            "plain_first_log": stream_rss(path, lines_first=False),
        }
        gz = Path(tmp) / "big.log.gz"
        with path.open("rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        path.unlink()
        out["gzip"] = stream_rss(gz)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="an 8 MB log instead of 100 MB")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--big", type=int, default=0, metavar="MB", help="also a log of MB")
    args, _ = parser.parse_known_args(argv)
    specs = load_specs()
    m = Matcher.build(specs, cache_dir=CACHE, with_similarity=False, workers=os.cpu_count() or 1)
    size = (8 if args.quick else 100) * 2**20
    log = make_mixed_log(specs, size)
    data = log.encode("utf-8")
    mb = len(data) / 2**20
    t = time.perf_counter()
    lines_database(m._shards)  # what the first whole log compiles, timed on its own
    lines_compile = time.perf_counter() - t
    m.match(data)  # warm: the line literals' database, the analyses of the patterns hit
    paste = next(line for line in log.splitlines() if " ERROR " in line)  # a one-line paste
    raw = cpu_median(lambda d=data: raw_scan(m, d))
    ours = cpu_median(lambda d=data: m.match(d))
    ours_text = cpu_median(lambda t=log: m.match(t))
    rep = m.match(data)
    res: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "quick": args.quick,
        "records": len(specs),
        "shards": m.stats["shards"],
        "log_mb": round(mb, 1),
        "log_lines": log.count("\n"),
        "answers": len(rep.answers) if hasattr(rep, "answers") else None,
        "raw_scan_cpu_s": round(raw, 3),
        "match_cpu_s": round(ours, 3),
        "raw_scan_mb_s": round(mb / raw, 1),
        "match_mb_s": round(mb / ours, 1),
        "match_vs_raw": round(raw / ours, 2),
        "goal": "match_vs_raw >= 0.5",
        # the same log given as text: encoded to UTF-8 first
        "match_text_cpu_s": round(ours_text, 3),
        "match_text_vs_raw": round(raw / ours_text, 2),
        "lines_database_compile_s": round(lines_compile, 2),
        "stage_shares": shares(m, data),
        "paste_stage_shares": shares(m, paste, PASTE_REPEAT),
        "steps": rep.normalised.steps,
    }
    with tempfile.NamedTemporaryFile(suffix=".log", delete=False) as fh:
        fh.write(data)
        path = Path(fh.name)
    del data, rep
    if args.big:
        res["big"] = measure_big(args.big, log)
    del log
    gc.collect()
    # the labelled set as users paste it: with the similarity fallback, as served
    res["envelopes_top1"] = envelope_top1(
        Matcher.build(specs, cache_dir=CACHE, workers=os.cpu_count() or 1)
    )
    try:
        one, big = peak_rss_mb(path)
    finally:
        path.unlink()
    res["rss_mb_one_line"] = one
    res["rss_mb_whole_log"] = big
    res["rss_mb_growth"] = round(big - one, 1)
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / "logs.json"
    out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
