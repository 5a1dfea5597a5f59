"""Benchmark of the matcher core against its goals, as ratios measured in one run.

At 16.7k real patterns and at 100k (1M with --full) patterns synthesised from them:
one-line latency p50/p99 of the whole path (normalise, scan, confirm, rank), whole-log
throughput, both against the naive loop of Python `re.search` and against the raw
Hyperscan scan (ids only) of the same databases; compile time, serialised size, load
time, memory, and how long an edited record takes to match (`with_changes`).

Synthetic sets: each synthetic pattern is a real record's template with 1-3 words
replaced or inserted (words drawn from the records' own vocabulary), re-escaped;
mutants with fewer than 6 literal characters are dropped. The naive loop is measured
on a sample of lines against a subset of patterns and extrapolated linearly (it is
linear in the number of patterns); the output says so.

Noise: this VM's speed moves by up to 2x from one minute to the next, so each figure is
taken more than once and the least disturbed kept: line latency is three first-sight
passes (pattern analyses forgotten before each) and the median pass is reported with all
three; whole-log and raw-scan throughput, the 64 KiB..1 MiB scaling and the 256 KiB
paste are each the best of several runs (5 or 7).

Run: `.venv/bin/python benchmarks/bench_matcher.py [--quick | --full]`
Writes benchmarks/results/matcher.json. Compiled shards are cached under
.cache/matcher-bench, so only the first run pays the compile.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import re
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kb.engine import Matcher, PatternSpec, cache  # noqa: E402
from kb.engine.matcher import SHARD_SIZE  # noqa: E402
from tests.engine.test_redos import EVIL_INPUTS, SIZE, paste_256k  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from matcher_data import load_specs, make_lines, make_log, synthesise  # noqa: E402

CACHE = REPO / ".cache" / "matcher-bench"
OUT = REPO / "benchmarks" / "results" / "matcher.json"


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def raw_scan_seconds(m: Matcher, data: bytes, repeat: int = 3) -> float:
    """Ids-only Hyperscan scan of every shard: no Python work per hit beyond a no-op."""

    def noop(*_a: object) -> None:
        return None

    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for sh in m._shards:
            if sh.db is not None:
                sh.db.scan(data, match_event_handler=noop, scratch=sh._scratch())
        best = min(best, time.perf_counter() - t0)
    return best


def raw_scan_cpu_seconds(m: Matcher, data: bytes, repeat: int = 5) -> float:
    """`raw_scan_seconds` in CPU time (best of `repeat`, as the whole-log figure)."""
    out = []
    for _ in range(repeat):
        c0 = time.process_time()
        raw_scan_seconds(m, data, 1)
        out.append(time.process_time() - c0)
    return min(out)


def cpu_ms(m: Matcher, text: str, repeat: int = 5) -> float:
    """CPU milliseconds of `m.match(text)`, best of `repeat` after a warm-up call (a burst
    from a neighbour can slow several calls in a row, which a median does not absorb)."""
    m.match(text)
    out = []
    for _ in range(repeat):
        c0 = time.process_time()
        m.match(text)
        out.append(time.process_time() - c0)
    return min(out) * 1000


def scaling(m: Matcher, log: str) -> dict:
    """docs/reliability.md#r12-linear-scaling: CPU time of 64 KiB ... 1 MiB pastes."""
    sizes = [64, 128, 256, 512, 1024]
    ms = []
    for kib in sizes:
        cut = log.rfind("\n", 0, kib * 1024) + 1 or kib * 1024
        ms.append(round(cpu_ms(m, log[:cut], 7), 2))
    ratios = [round(b / a, 2) for a, b in itertools.pairwise(ms)]
    return {"kib": sizes, "cpu_ms": ms, "ratios": ratios}


def naive_per_line_us(specs: list[PatternSpec], lines: list[str], subset: int) -> float:
    """Python `re.search` loop over `subset` patterns, extrapolated to all of them."""
    pats = [re.compile(s.pattern) for s in specs[:subset]]
    t0 = time.perf_counter()
    for line in lines:
        for p in pats:
            p.search(line)
    per_line = (time.perf_counter() - t0) / len(lines)
    return per_line * len(specs) / len(pats) * 1e6


def bench_size(label: str, specs: list[PatternSpec], args: argparse.Namespace) -> dict:
    print(f"\n== {label}: {len(specs):,} records", flush=True)
    res: dict[str, object] = {"label": label, "records": len(specs)}
    t0 = time.perf_counter()
    m = Matcher.build(specs, cache_dir=CACHE, with_similarity=False, workers=os.cpu_count() or 1)
    res["first_build_s"] = round(time.perf_counter() - t0, 2)
    res["compile_s_if_uncached"] = m.stats["compile_s"] or "cached (see first run)"
    res["shards"] = m.stats["shards"]
    res["serialised_mb"] = round(m.stats["serialised_bytes"] / 2**20, 1)
    rss0 = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    m = Matcher.build(specs, cache_dir=CACHE, with_similarity=False)
    res["load_s"] = round(time.perf_counter() - t0, 3)  # a worker start: hash specs + load
    res["load_cpu_s"] = round(time.process_time() - c0, 3)
    res["load_from"] = "matcher cache" if m.stats.get("matcher_from_cache") else "shards"
    # the start-up before the matcher cache: shards from their cache, everything else
    # rebuilt (plus, now, writing the matcher file); the reversed order is another key,
    # whose matcher file from an earlier run is removed first
    rev = specs[::-1]
    cache.matcher_path(CACHE, cache.specs_digest(rev, f"{SHARD_SIZE}\x00False")).unlink(
        missing_ok=True
    )
    t0, c0 = time.perf_counter(), time.process_time()
    Matcher.build(rev, cache_dir=CACHE, with_similarity=False)
    res["build_from_shard_cache_s"] = round(time.perf_counter() - t0, 3)  # the old start-up
    res["build_from_shard_cache_cpu_s"] = round(time.process_time() - c0, 3)
    res["rss_mb_after_load"] = round(rss_mb(), 1)
    res["rss_mb_delta_second_load"] = round(rss_mb() - rss0, 1)
    t0 = time.perf_counter()
    msim = Matcher.build(specs, cache_dir=CACHE, with_similarity=True)
    res["load_with_similarity_s"] = round(time.perf_counter() - t0, 3)

    # as the app does after each full build (kb.matching.holder): no full GC walks the matcher
    gc.collect()
    gc.freeze()
    lines = make_lines(specs, 400 if args.quick else 2000)
    for line in lines[:50]:
        msim.match(line)  # warm the code paths (the analyses are forgotten again below)
    # First sight, three times: before each pass the matcher forgets every pattern
    # analysis it built lazily (as a freshly started worker has none), so each pass is a
    # first sight again; a pass's p99 rests on its 20 slowest lines, and one burst from a
    # neighbour on this shared VM moves it, so the median pass is reported (all three too).
    passes = []
    for _ in range(3):
        msim._analyses.clear()
        lat, cpu = [], []
        for line in lines:
            t0, c0 = time.perf_counter(), time.process_time()
            msim.match(line)
            lat.append((time.perf_counter() - t0) * 1e6)
            cpu.append((time.process_time() - c0) * 1e6)
        passes.append(
            (pct(lat, 0.99), statistics.median(lat), pct(cpu, 0.99), statistics.median(cpu))
        )
    passes.sort()
    p99, p50, p99_cpu, p50_cpu = passes[1]
    res["line_p50_us"] = round(p50, 1)
    res["line_p99_us"] = round(p99, 1)
    res["line_p99_us_passes"] = [round(p[0], 1) for p in passes]
    # CPU time excludes waiting for a CPU: on a shared, overloaded machine the wall-clock
    # p99 is mostly scheduling delay, not matcher work
    res["line_p50_cpu_us"] = round(p50_cpu, 1)
    res["line_p99_cpu_us"] = round(p99_cpu, 1)
    # The passes above meet most patterns for the first time (their analysis is built on
    # first use: at 1M nearly every line is a first); a long-running worker has seen the
    # hot ones. The same lines again, CPU time: the warm figure, reported beside it.
    warm = []
    for line in lines:
        c0 = time.process_time()
        msim.match(line)
        warm.append((time.process_time() - c0) * 1e6)
    res["line_p50_warm_cpu_us"] = round(statistics.median(warm), 1)
    res["line_p99_warm_cpu_us"] = round(pct(warm, 0.99), 1)
    raw = []
    for line in lines:
        data = line.encode()
        raw.append(raw_scan_seconds(m, data, 1) * 1e6)
    res["raw_line_p50_us"] = round(statistics.median(raw), 1)
    subset = min(len(specs), 2000)
    naive_lines = lines[:20]
    naive = naive_per_line_us(specs, naive_lines, subset)
    res["naive_line_us_extrapolated"] = round(naive, 1)
    res["naive_note"] = (
        f"{len(naive_lines)} lines x {subset} patterns, scaled x{len(specs) / subset:.1f}"
    )
    res["speedup_vs_naive_p50"] = round(naive / res["line_p50_us"], 1)

    log = make_log(specs, 2 if args.quick else 10)
    mb = len(log.encode()) / 2**20
    msim.match(log)
    # Best of 5 on both sides of the ratio (the raw scan too): on this shared VM one run
    # of the same call varies up to 2x in user CPU time, and the minimum is the estimate
    # least touched by neighbours. The medians are kept beside it.
    whole_wall, whole_cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        rep = msim.match(log)
        whole_wall.append(time.perf_counter() - t0)
        whole_cpu.append(time.process_time() - c0)
    whole = min(whole_wall)
    norm_bytes = rep.normalised.text.encode("utf-8", "replace")
    raw_s = raw_scan_seconds(m, norm_bytes, 5)
    raw_cpu = raw_scan_cpu_seconds(m, norm_bytes)
    res["log_mb"] = round(mb, 1)
    res["log_mb_s"] = round(mb / whole, 1)
    res["log_mb_s_median"] = round(mb / statistics.median(whole_wall), 1)
    res["raw_scan_mb_s"] = round(mb / raw_s, 1)
    res["log_vs_raw"] = round(raw_s / whole, 2)
    # the same ratio in CPU time: robust to other processes taking the CPU
    res["log_mb_s_cpu"] = round(mb / min(whole_cpu), 1)
    res["raw_scan_mb_s_cpu"] = round(mb / raw_cpu, 1)
    res["log_vs_raw_cpu"] = round(raw_cpu / min(whole_cpu), 2)
    res["scaling"] = scaling(msim, log)
    res["scaling_max_ratio"] = max(res["scaling"]["ratios"])
    res["paste_256k_cpu_ms"] = round(cpu_ms(msim, paste_256k()), 1)
    # the ReDoS bait of tests/engine/test_redos.py, at the size its ratios start from
    res["hostile_cpu_ms"] = {
        k: round(cpu_ms(msim, make(SIZE)), 1) for k, make in EVIL_INPUTS.items()
    }
    res["hostile_max_cpu_ms"] = max(res["hostile_cpu_ms"].values())
    res["log_groups"] = len(rep.groups)
    log_lines = log.split("\n")[:200]
    naive_log = naive_per_line_us(specs, log_lines, min(len(specs), 500)) * len(log.split("\n"))
    res["naive_log_mb_s_extrapolated"] = round(mb / (naive_log / 1e6), 4)

    victim = specs[len(specs) // 2]
    edited = PatternSpec(victim.key, "Edited record message says (.+?) happened here", "e")
    t0 = time.perf_counter()
    m2 = msim.with_changes([edited], [])
    rep2 = m2.match("ERROR edited: Edited record message says xyz happened here")
    res["edit_to_match_s"] = round(time.perf_counter() - t0, 4)
    res["edit_matched"] = bool(rep2.matches) and rep2.matches[0].key == victim.key
    blob = msim.dumps()
    t0 = time.perf_counter()
    Matcher.loads(blob)
    res["pickled_matcher_mb"] = round(len(blob) / 2**20, 1)
    res["pickled_matcher_load_s"] = round(time.perf_counter() - t0, 3)
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    gc.unfreeze()  # the next size's matchers replace these
    for k, v in res.items():
        print(f"  {k:32s} {v}")
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="16.7k only, fewer lines")
    ap.add_argument("--full", action="store_true", help="also 1M synthetic patterns")
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    real = load_specs()
    results = [bench_size("real 16.7k", real, args)]
    if not args.quick:
        syn = synthesise(real, 100_000 - len(real))
        results.append(bench_size("100k (real + synthetic mutants)", real + syn, args))
    if args.full:
        syn = synthesise(real, 1_000_000 - len(real), seed=11)
        results.append(bench_size("1M (real + synthetic mutants)", real + syn, args))
    goals = {
        "speedup_vs_naive_at_100k": ">= 1000x",
        "line_p99_at_100k": "< 2000 us",
        "log_vs_raw": ">= 0.5 (log_vs_raw_cpu: the same in CPU time)",
        "scaling_max_ratio": "<= 2.5 (docs/reliability.md#r12-linear-scaling: 64 KiB..1 MiB)",
        "paste_256k_cpu_ms": "< 50 (docs/reliability.md#r11-redos)",
        "hostile_max_cpu_ms": "< 50 (docs/reliability.md#r11-redos: every bait input)",
        "load_s": "< 1 s",
        "edit_to_match_at_100k": "< 2 s",
        "line_p99_at_1M": "< 5000 us",
    }
    cols = ["label", "line_p50_us", "line_p99_us", "line_p99_cpu_us", "line_p99_warm_cpu_us",
            "naive_line_us_extrapolated",
            "speedup_vs_naive_p50", "log_mb_s", "raw_scan_mb_s", "log_vs_raw", "log_vs_raw_cpu",
            "scaling_max_ratio", "paste_256k_cpu_ms", "hostile_max_cpu_ms", "load_s",
            "build_from_shard_cache_s",
            "pickled_matcher_load_s", "serialised_mb", "edit_to_match_s"]  # fmt: skip
    print("\n" + " | ".join(cols))
    for r in results:
        print(" | ".join(str(r.get(c, "")) for c in cols))
    print("\nsynthetic sets: real templates with 1-3 words replaced/inserted from the records'")
    print("own vocabulary, mutants with < 6 literal characters dropped; naive `re` loop")
    print("measured on a sample of lines x a subset of patterns and extrapolated linearly.")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"goals": goals, "results": results}, indent=2) + "\n")
    print(f"load average during the run: {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
