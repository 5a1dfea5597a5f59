"""Benchmark and quality check for kb/engine/similar.py (near-miss suggestions).

Measures, at the real 16.7k records and at 100k synthesised templates:
build time, memory, pickle size / load time, query latency p50/p99, and the
quality figures: recall@3 on a synthetic *drift* set (real templates rendered
with values, then reworded / truncated / re-cased / given log prefixes) and the
false-suggestion rate on non-error lines (INFO chatter from the eval
``negative`` texts plus synthetic INFO lines). Also compares scoring methods.

Run: ``.venv/bin/python benchmarks/bench_similar.py [--quick] [--1m] [--results=DIR]``
(``--quick``: the 16.7k records only, fewer drifted cases). Writes
``benchmarks/results/similar.json`` (or into DIR), with the timings' raw values beside it
(``similar.pyperf.json``). Data dir: env ``KB_DATASET_DIR`` (the full dataset's
directory). The data, the drift / negative sets and the quality measures come from
``tests/engine/similar_cases.py``, which the tests hold bars on; this file times the index
(``benchmarks/timing.py``) and reports.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pyperf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (str(REPO), str(HERE)):  # kb and tests, and timing beside this file
    if _path not in sys.path:
        sys.path.insert(0, _path)

import timing  # noqa: E402

from kb.engine import similar  # noqa: E402
from kb.engine.similar import SimilarityIndex  # noqa: E402
from tests.engine.similar_cases import (  # noqa: E402
    drift_cases,
    eval_drifted,
    false_rate,
    family_recall_at,
    load_records,
    negative_lines,
    recall_at,
    synth_corpus,
)

RESULTS = HERE / "results"

# --------------------------------------------------------- measurement


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def timed_build(
    items: list[tuple[str, str]], kept: list[pyperf.Benchmark], name: str, *, trace: bool = True
) -> tuple[SimilarityIndex, float, float, float]:
    """(index, build seconds, peak MB allocated during build, MB the index retains).

    With ``trace`` the memory comes from tracemalloc (exact, but slows a 1M build
    several-fold); without it from the process RSS before/after (approximate).
    """
    gc.collect()
    if trace:
        tracemalloc.start()
        idx = SimilarityIndex.build(items)
        retained, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del idx
        gc.collect()
    rss0 = _rss_mb()
    build = timing.time_once(f"{name}: build", lambda: SimilarityIndex.build(items))
    kept += build.benchmarks
    if not trace:
        retained = peak = (_rss_mb() - rss0) * 1e6
    return build.result, build.wall.median(), peak / 1e6, retained / 1e6


def latency(
    idx: SimilarityIndex, lines: list[str], kept: list[pyperf.Benchmark], name: str, repeat: int = 3
) -> dict[str, float]:
    """Per-line time of ``query`` (one value per line and pass): wall p50/p99 of the first
    pass, of each line's fastest of ``repeat`` passes, and the same in CPU time: the last
    two are less sensitive to other processes on a shared machine."""
    passes = [
        timing.time_each(f"{name}: query, pass {n + 1}", idx.query, lines) for n in range(repeat)
    ]
    kept += [b for one in passes for b in one.benchmarks]

    def fastest(clock: str) -> pyperf.Benchmark:
        per_line = zip(*(getattr(one, clock).get_values() for one in passes), strict=True)
        return timing.from_values(
            f"{name}: query, fastest of {repeat} ({clock})", [min(v) for v in per_line]
        )

    single, best, cpu = passes[0].wall, fastest("wall"), fastest("cpu")

    def pct(bench: pyperf.Benchmark, q: float) -> float:
        return round(bench.percentile(q) * 1e3, 3)

    return {
        "p50_ms": pct(single, 50),
        "p99_ms": pct(single, 99),
        "max_ms": pct(single, 100),
        "best_of_3_p50_ms": pct(best, 50),
        "best_of_3_p99_ms": pct(best, 99),
        "cpu_best_of_3_p50_ms": pct(cpu, 50),
        "cpu_best_of_3_p99_ms": pct(cpu, 99),
        "n": single.get_nvalue(),
    }


def sizes(idx: SimilarityIndex, kept: list[pyperf.Benchmark], name: str) -> dict[str, float]:
    dump = timing.time_once(f"{name}: pickle", lambda: pickle.dumps(idx, protocol=5))
    blob = dump.result
    load = timing.time_once(f"{name}: unpickle", lambda: pickle.loads(blob))
    kept += [*dump.benchmarks, *load.benchmarks]
    return {
        "pickle_mb": round(len(blob) / 1e6, 2),
        "dump_s": round(dump.wall.median(), 3),
        "load_s": round(load.wall.median(), 3),
    }


def _no_fuzzy(_a: str, _b: str, **_kw: object) -> float:
    return 0.0


def scorer_variants() -> Iterator[tuple[str, dict[str, object]]]:
    """Alternative final scorers compared in the report (same candidate generation)."""
    from rapidfuzz import fuzz

    yield "idf_coverage_only", {"fuzzy_scorer": _no_fuzzy, "coverage_weight": 1.0}
    for name in ("token_set_ratio", "partial_ratio", "WRatio", "partial_token_set_ratio"):
        yield name, {"fuzzy_scorer": getattr(fuzz, name), "coverage_weight": 0.0}
    for name in ("token_set_ratio", "partial_ratio", "WRatio", "token_sort_ratio"):
        yield f"cov+{name}", {"fuzzy_scorer": getattr(fuzz, name), "coverage_weight": 0.5}


def compare_methods(
    idx: SimilarityIndex, cases: list[tuple[str, set[str]]], neg: list[str]
) -> dict[str, dict[str, float]]:
    """Recall@3 (no threshold, and at the threshold giving <= 5% false suggestions)."""
    out = {}
    saved = {k: getattr(SimilarityIndex, k) for k in ("fuzzy_scorer", "coverage_weight")}
    spec = idx._entry_spec
    variants = [*scorer_variants(), ("cov+partial_ratio_no_specificity", {})]
    try:
        for name, attrs in variants:
            for k, v in attrs.items():
                setattr(SimilarityIndex, k, staticmethod(v) if k == "fuzzy_scorer" else v)
            if name.endswith("no_specificity"):
                idx._entry_spec = type(spec)("d", [1.0] * len(spec))
            row = {"recall@3_nothreshold": round(recall_at(idx, cases, min_score=0.0), 4)}
            scores = sorted(
                (r[0][1] if (r := idx.query(ln, limit=1, min_score=0.0)) else 0.0) for ln in neg
            )
            thr = scores[int(len(scores) * 0.95)] + 1e-4
            row["thr_at_5pct_false"] = round(thr, 4)
            row["recall@3_at_that_thr"] = round(recall_at(idx, cases, min_score=thr), 4)
            out[name] = row
            for k, v in saved.items():
                setattr(SimilarityIndex, k, v)
            idx._entry_spec = spec
    finally:
        for k, v in saved.items():
            setattr(SimilarityIndex, k, v)
        idx._entry_spec = spec
    return out


def long_token_query_ms(idx: SimilarityIndex, kept: list[pyperf.Benchmark]) -> dict[str, float]:
    """Median CPU milliseconds of a query on an unbroken 5,000-character token: the query
    cap and the linear line cleaner keep it near an ordinary line's cost
    (``tests/engine/test_similar.py`` checks the same as ratios between sizes)."""
    out = {}
    for token in ("x=", "a/", "/=", "ab"):
        text = token * 2500
        one = timing.time_call(
            f"query, long token {token}", lambda text=text: idx.query_explained(text)
        )
        kept += one.benchmarks
        out[token] = round(one.cpu.median() * 1e3, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16.7k only, fewer drifted cases")
    ap.add_argument("--1m", dest="one_m", action="store_true", help="also 1M templates")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = ap.parse_args()
    records = load_records()
    results: dict[str, object] = {
        "default_min_score": similar.DEFAULT_MIN_SCORE,
        "score_scale": "0..1",
        "machine_load_avg_at_start": os.getloadavg(),
    }
    if args.quick:
        results["quick"] = True
    kept: list[pyperf.Benchmark] = []
    cases = drift_cases(records, 200 if args.quick else 600)
    neg = negative_lines()
    idx, _bt, _mem, _ret = timed_build(records, kept, "16.7k, first")
    results["methods"] = compare_methods(idx, cases, neg)
    q_lines = [c[0] for c in cases]
    sizes_wanted = [("16.7k", 0)] if args.quick else [("16.7k", 0), ("100k", 100_000)]
    if args.one_m:
        sizes_wanted.append(("1M", 1_000_000))
    for label, n in sizes_wanted:
        items = synth_corpus(records, n) if n else records
        idx, bt, mem, ret = timed_build(items, kept, label, trace=n <= 100_000)
        row: dict[str, object] = {
            "index_retained_mb": round(ret, 1),
            "templates": len(items),
            "entries": len(idx),
            "build_s": round(bt, 2),
            "build_peak_mb": round(mem, 1),
            **sizes(idx, kept, label),
            "query": latency(idx, q_lines + neg, kept, label),
            "recall@3": round(recall_at(idx, cases), 4),
            "recall@3_original_or_its_mutant": round(family_recall_at(idx, cases), 4),
            "false_suggestion_rate": round(false_rate(idx, neg), 4),
        }
        many = timing.time_call(
            f"{label}: query_many", lambda idx=idx: idx.query_many(q_lines), values=3
        )
        kept += many.benchmarks
        row["query_many_ms_per_line"] = round(many.wall.median() * 1e3 / len(q_lines), 3)
        if label == "16.7k":
            row["eval_drifted"] = eval_drifted(idx, records)
            row["long_token_query_ms"] = long_token_query_ms(idx, kept)
        results[label] = row
        del idx, items, many
        gc.collect()
    results["n_drift_cases"] = len(cases)
    results["n_negative_lines"] = len(neg)
    out = args.results / "similar.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    raw = timing.dump("similar", kept, args.results)
    recall = ", ".join(f"{label} {results[label]['recall@3']}" for label, _ in sizes_wanted)
    print(f"recall@3: {recall}; wrote {out} and {raw.name}")


if __name__ == "__main__":
    main()
