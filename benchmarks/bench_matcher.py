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

Timing: ``benchmarks/timing.py`` (pyperf's values and statistics). This VM's speed moves
from one minute to the next, so each figure is taken more than once: line latency is three
first-sight passes (pattern analyses forgotten before each, one value per line) and the
median pass is reported with all three; whole-log and raw-scan throughput, the 64 KiB..1
MiB scaling, the 256 KiB paste and the hostile inputs are each the median of several
values (calibrated loops after a warm-up); builds and loads, whose first call is the
figure, are timed once.

Run: `.venv/bin/python benchmarks/bench_matcher.py [--quick | --full] [--results=DIR]`
Writes benchmarks/results/matcher.json (or into DIR), with the timings' raw values
beside it (matcher.pyperf.json). Compiled shards are cached under .cache/matcher-bench,
so only the first run pays the compile.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import re
import resource
import sys
from pathlib import Path

import pyperf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import timing  # noqa: E402 - beside this file, found through the line above
from matcher_data import (  # noqa: E402
    load_specs,
    make_lines,
    make_log,
    raw_scan,
    synthesise,
)

from kb.engine import Matcher, PatternSpec, cache  # noqa: E402
from tests.engine.redos_inputs import EVIL_INPUTS, SIZE, paste_256k  # noqa: E402

CACHE = REPO / ".cache" / "matcher-bench"
RESULTS = REPO / "benchmarks" / "results"


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Timings:
    """The run's timings, kept for the raw-values file, each under its pattern set's label."""

    def __init__(self) -> None:
        self.kept: list[pyperf.Benchmark] = []

    def keep(self, t: timing.Timing) -> timing.Timing:
        self.kept += t.benchmarks
        return t

    def call(self, name: str, func, values: int = 5) -> timing.Timing:
        return self.keep(timing.time_call(name, func, values=values))

    def once(self, name: str, func) -> timing.Timing:
        return self.keep(timing.time_once(name, func))

    def each(self, name: str, func, inputs) -> timing.Timing:
        return self.keep(timing.time_each(name, func, inputs))


def cpu_ms(t: Timings, name: str, m: Matcher, text: str, values: int = 5) -> float:
    """Median CPU milliseconds of `m.match(text)`."""
    return t.call(name, lambda: m.match(text), values).cpu.median() * 1000


def scaling(t: Timings, label: str, m: Matcher, log: str) -> dict:
    """docs/reliability.md#r12-linear-scaling: CPU time of 64 KiB ... 1 MiB pastes."""
    sizes = [64, 128, 256, 512, 1024]
    ms = []
    for kib in sizes:
        cut = log.rfind("\n", 0, kib * 1024) + 1 or kib * 1024
        ms.append(round(cpu_ms(t, f"{label}: scaling, {kib} KiB", m, log[:cut], 7), 2))
    ratios = [round(b / a, 2) for a, b in itertools.pairwise(ms)]
    return {"kib": sizes, "cpu_ms": ms, "ratios": ratios}


def naive_per_line_us(
    t: Timings, name: str, specs: list[PatternSpec], lines: list[str], subset: int
) -> float:
    """Python `re.search` loop over `subset` patterns, extrapolated to all of them."""
    pats = [re.compile(s.pattern) for s in specs[:subset]]

    def loop() -> None:
        for line in lines:
            for p in pats:
                p.search(line)

    per_line = t.call(name, loop, values=3).wall.median() / len(lines)
    return per_line * len(specs) / len(pats) * 1e6


def bench_size(label: str, specs: list[PatternSpec], args: argparse.Namespace, t: Timings) -> dict:
    print(f"\n== {label}: {len(specs):,} records", flush=True)
    res: dict[str, object] = {"label": label, "records": len(specs)}
    workers = os.cpu_count() or 1
    first = t.once(
        f"{label}: first build",
        lambda: Matcher.build(specs, cache_dir=CACHE, with_similarity=False, workers=workers),
    )
    m = first.result
    res["first_build_s"] = round(first.wall.median(), 2)
    res["compile_s_if_uncached"] = m.stats["compile_s"] or "cached (see first run)"
    res["shards"] = m.stats["shards"]
    res["serialised_mb"] = round(m.stats["serialised_bytes"] / 2**20, 1)
    rss0 = rss_mb()
    load = t.once(
        f"{label}: load", lambda: Matcher.build(specs, cache_dir=CACHE, with_similarity=False)
    )
    m = load.result
    res["load_s"] = round(load.wall.median(), 3)  # a worker start: hash specs + load
    res["load_cpu_s"] = round(load.cpu.median(), 3)
    res["load_from"] = "matcher cache" if m.stats.get("matcher_from_cache") else "shards"
    # the start-up before the matcher cache: shards from their cache, everything else
    # rebuilt (plus, now, writing the matcher file); the same patterns in the same order
    # under other keys are another matcher file (the same shards), removed first if an
    # earlier run left it
    rev = [PatternSpec(f"{s.key}~", s.pattern, s.message) for s in specs]
    cache.matcher_path(CACHE, cache.specs_digest(rev, cache.build_options(None, False))).unlink(
        missing_ok=True
    )
    shards = t.once(
        f"{label}: build from the shard cache",
        lambda: Matcher.build(rev, cache_dir=CACHE, with_similarity=False),
    )
    res["build_from_shard_cache_s"] = round(shards.wall.median(), 3)  # the old start-up
    res["build_from_shard_cache_cpu_s"] = round(shards.cpu.median(), 3)
    del shards
    res["rss_mb_after_load"] = round(rss_mb(), 1)
    res["rss_mb_delta_second_load"] = round(rss_mb() - rss0, 1)
    with_similarity = t.once(
        f"{label}: load with similarity",
        lambda: Matcher.build(specs, cache_dir=CACHE, with_similarity=True),
    )
    msim = with_similarity.result
    res["load_with_similarity_s"] = round(with_similarity.wall.median(), 3)

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
    for n in range(3):
        msim._analyses.clear()
        one = t.each(f"{label}: line, first sight, pass {n + 1}", msim.match, lines)
        passes.append(
            (
                one.wall.percentile(99) * 1e6,
                one.wall.median() * 1e6,
                one.cpu.percentile(99) * 1e6,
                one.cpu.median() * 1e6,
            )
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
    warm = t.each(f"{label}: line, warm", msim.match, lines).cpu
    res["line_p50_warm_cpu_us"] = round(warm.median() * 1e6, 1)
    res["line_p99_warm_cpu_us"] = round(warm.percentile(99) * 1e6, 1)
    raw = t.each(f"{label}: line, raw scan", lambda d: raw_scan(m, d), [x.encode() for x in lines])
    res["raw_line_p50_us"] = round(raw.wall.median() * 1e6, 1)
    subset = min(len(specs), 2000)
    naive_lines = lines[:20]
    naive = naive_per_line_us(t, f"{label}: line, naive re", specs, naive_lines, subset)
    res["naive_line_us_extrapolated"] = round(naive, 1)
    res["naive_note"] = (
        f"{len(naive_lines)} lines x {subset} patterns, scaled x{len(specs) / subset:.1f}"
    )
    res["speedup_vs_naive_p50"] = round(naive / res["line_p50_us"], 1)

    log = make_log(specs, 2 if args.quick else 10)
    mb = len(log.encode()) / 2**20
    # The median of several values on both sides of the ratio (the raw scan too): on this
    # shared VM one run of the same call varies widely in CPU time.
    whole = t.call(f"{label}: whole log", lambda: msim.match(log))
    rep = whole.result
    norm_bytes = rep.normalised.text.encode("utf-8", "replace")
    scan = t.call(f"{label}: whole log, raw scan", lambda: raw_scan(m, norm_bytes))
    res["log_mb"] = round(mb, 1)
    res["log_mb_s"] = round(mb / whole.wall.median(), 1)
    res["raw_scan_mb_s"] = round(mb / scan.wall.median(), 1)
    res["log_vs_raw"] = round(scan.wall.median() / whole.wall.median(), 2)
    # the same ratio in CPU time: robust to other processes taking the CPU
    res["log_mb_s_cpu"] = round(mb / whole.cpu.median(), 1)
    res["raw_scan_mb_s_cpu"] = round(mb / scan.cpu.median(), 1)
    res["log_vs_raw_cpu"] = round(scan.cpu.median() / whole.cpu.median(), 2)
    res["log_vs_raw_cpu_compared"] = timing.compare(whole.cpu, scan.cpu)
    del whole, scan
    res["scaling"] = scaling(t, label, msim, log)
    res["scaling_max_ratio"] = max(res["scaling"]["ratios"])
    res["paste_256k_cpu_ms"] = round(cpu_ms(t, f"{label}: 256 KiB paste", msim, paste_256k()), 1)
    # the ReDoS bait of tests/engine/test_redos.py, at the size its ratios start from
    res["hostile_cpu_ms"] = {
        k: round(cpu_ms(t, f"{label}: hostile {k}", msim, make(SIZE)), 1)
        for k, make in EVIL_INPUTS.items()
    }
    res["hostile_max_cpu_ms"] = max(res["hostile_cpu_ms"].values())
    res["log_groups"] = len(rep.groups)
    log_lines = log.split("\n")[:200]
    naive_log = naive_per_line_us(
        t, f"{label}: whole log, naive re", specs, log_lines, min(len(specs), 500)
    ) * len(log.split("\n"))
    res["naive_log_mb_s_extrapolated"] = round(mb / (naive_log / 1e6), 4)

    victim = specs[len(specs) // 2]
    edited = PatternSpec(victim.key, "Edited record message says (.+?) happened here", "e")

    def edit_and_match():
        changed = msim.with_changes([edited], [])
        return changed.match("ERROR edited: Edited record message says xyz happened here")

    edit = t.once(f"{label}: edit to match", edit_and_match)
    rep2 = edit.result
    res["edit_to_match_s"] = round(edit.wall.median(), 4)
    res["edit_matched"] = bool(rep2.matches) and rep2.matches[0].key == victim.key
    blob = msim.dumps()
    unpickle = t.once(f"{label}: unpickle", lambda: Matcher.loads(blob))
    res["pickled_matcher_mb"] = round(len(blob) / 2**20, 1)
    res["pickled_matcher_load_s"] = round(unpickle.wall.median(), 3)
    del unpickle, edit, first, load, with_similarity
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    gc.unfreeze()  # the next size's matchers replace these
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="16.7k only, fewer lines")
    ap.add_argument("--full", action="store_true", help="also 1M synthetic patterns")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    real = load_specs()
    t = Timings()
    results = [bench_size("real 16.7k", real, args, t)]
    if not args.quick:
        syn = synthesise(real, 100_000 - len(real))
        results.append(bench_size("100k (real + synthetic mutants)", real + syn, args, t))
    if args.full:
        syn = synthesise(real, 1_000_000 - len(real), seed=11)
        results.append(bench_size("1M (real + synthetic mutants)", real + syn, args, t))
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
    out = args.results / "matcher.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    method = "medians of pyperf values (benchmarks/timing.py); builds and loads timed once"
    out.write_text(
        json.dumps({"goals": goals, "method": method, "results": results}, indent=2) + "\n"
    )
    raw = timing.dump("matcher", t.kept, args.results)
    p99 = ", ".join(f"{r['label']} {r['line_p99_us']} µs" for r in results)
    print(f"line p99: {p99}; wrote {out} and {raw.name}")


if __name__ == "__main__":
    main()
