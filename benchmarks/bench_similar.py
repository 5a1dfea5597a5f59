"""Benchmark and quality check for kb/engine/similar.py (near-miss suggestions).

Measures, at the real 16.7k records and at 100k synthesised templates:
build time, memory, pickle size / load time, query latency p50/p99, and the
quality figures: recall@3 on a synthetic *drift* set (real templates rendered
with values, then reworded / truncated / re-cased / given log prefixes) and the
false-suggestion rate on non-error lines (INFO chatter from the eval
``negative`` texts plus synthetic INFO lines). Also compares scoring methods.

Run: ``.venv/bin/python benchmarks/bench_similar.py``
Writes ``benchmarks/results/similar.json``. Data dir: env ``KB_SHARED_DATA`` (the full
dataset's directory). The data and the drift / negative sets come
from ``benchmarks/similar_cases.py``; this file measures and reports.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (str(REPO), str(HERE)):  # kb, and similar_cases beside this file
    if _path not in sys.path:
        sys.path.insert(0, _path)

from similar_cases import (  # noqa: E402, F401 - load_records etc. are used from here by tests
    DATA,
    drift,
    drift_cases,
    load_eval,
    load_records,
    negative_lines,
    render,
    synth_corpus,
    synthetic_info,
)

from kb.engine import similar  # noqa: E402
from kb.engine.similar import SimilarityIndex  # noqa: E402

# --------------------------------------------------------- measurement


def recall_at(idx: SimilarityIndex, cases: list[tuple[str, set[str]]], k: int = 3, **kw) -> float:
    hits = 0
    for line, keys in cases:
        res = idx.query(line, limit=k, **kw)
        if any(key in keys for key, _ in res):
            hits += 1
    return hits / len(cases)


def family_recall_at(idx: SimilarityIndex, cases: list[tuple[str, set[str]]], k: int = 3) -> float:
    """Like recall_at, but a synthetic mutant of the expected template also counts."""
    hits = 0
    for line, keys in cases:
        if any(key.rsplit(":", 1)[-1] in keys for key, _ in idx.query(line, limit=k)):
            hits += 1
    return hits / len(cases)


def false_rate(idx: SimilarityIndex, lines: list[str], **kw) -> float:
    return sum(1 for ln in lines if idx.query(ln, limit=1, **kw)) / len(lines)


def eval_drifted(idx: SimilarityIndex, records: list[tuple[str, str]]) -> list[dict]:
    """The published ``drifted`` cases: rank of the expected record among suggestions."""
    by_key = dict(records)
    groups: dict[str, set[str]] = {}
    for k, t in records:
        groups.setdefault(t, set()).add(k)
    out = []
    for case in load_eval():
        if case["stratum"] != "drifted":
            continue
        ok = set()
        for k in case["expected"]:
            ok |= groups.get(by_key.get(k, ""), {k})
        best = None
        for ln in case["text"].splitlines():
            for rank, (key, _s) in enumerate(idx.query(ln, limit=3)):
                if key in ok and (best is None or rank < best):
                    best = rank
        out.append({"id": case["id"], "rank": best})
    return out


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def timed_build(
    items: list[tuple[str, str]], *, trace: bool = True
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
    t0 = time.perf_counter()
    idx = SimilarityIndex.build(items)
    dt = time.perf_counter() - t0
    if not trace:
        retained = peak = (_rss_mb() - rss0) * 1e6
    return idx, dt, peak / 1e6, retained / 1e6


def latency(idx: SimilarityIndex, lines: list[str], repeat: int = 3) -> dict[str, float]:
    """Per-line time of ``query``: wall p50/p99 of a single pass, of the best of
    ``repeat`` passes, and CPU time (process_time) best of ``repeat``: the last two
    are less sensitive to other processes on a shared machine."""
    runs, cpu_runs = [], []
    for _ in range(repeat):
        ts, cs = [], []
        for ln in lines:
            t0, c0 = time.perf_counter(), time.process_time()
            idx.query(ln)
            cs.append((time.process_time() - c0) * 1e3)
            ts.append((time.perf_counter() - t0) * 1e3)
        runs.append(ts)
        cpu_runs.append(cs)
    single = sorted(runs[0])
    best = sorted(min(col) for col in zip(*runs, strict=True))
    cpu = sorted(min(col) for col in zip(*cpu_runs, strict=True))

    def pct(v: list[float], q: float) -> float:
        return round(v[min(len(v) - 1, int(len(v) * q))], 3)

    return {
        "p50_ms": pct(single, 0.5),
        "p99_ms": pct(single, 0.99),
        "max_ms": round(single[-1], 3),
        "best_of_3_p50_ms": pct(best, 0.5),
        "best_of_3_p99_ms": pct(best, 0.99),
        "cpu_best_of_3_p50_ms": pct(cpu, 0.5),
        "cpu_best_of_3_p99_ms": pct(cpu, 0.99),
        "n": len(single),
    }


def sizes(idx: SimilarityIndex) -> dict[str, float]:
    t0 = time.perf_counter()
    blob = pickle.dumps(idx, protocol=5)
    dump = time.perf_counter() - t0
    t0 = time.perf_counter()
    pickle.loads(blob)
    load = time.perf_counter() - t0
    return {
        "pickle_mb": round(len(blob) / 1e6, 2),
        "dump_s": round(dump, 3),
        "load_s": round(load, 3),
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
            print(name, row, flush=True)
            for k, v in saved.items():
                setattr(SimilarityIndex, k, v)
            idx._entry_spec = spec
    finally:
        for k, v in saved.items():
            setattr(SimilarityIndex, k, v)
        idx._entry_spec = spec
    return out


def long_token_query_ms(idx: SimilarityIndex) -> dict[str, float]:
    """CPU milliseconds of a query on an unbroken 5,000-character token (best of 5): the
    query cap and the linear line cleaner keep it near an ordinary line's cost
    (``tests/engine/test_similar.py`` checks the same as ratios between sizes)."""
    out = {}
    for token in ("x=", "a/", "/=", "ab"):
        best = float("inf")
        for _ in range(5):
            c0 = time.process_time()
            idx.query_explained(token * 2500)
            best = min(best, time.process_time() - c0)
        out[token] = round(best * 1e3, 3)
    return out


def main() -> None:
    records = load_records()
    results: dict[str, object] = {
        "default_min_score": similar.DEFAULT_MIN_SCORE,
        "score_scale": "0..1",
        "machine_load_avg_at_start": os.getloadavg(),
    }
    cases = drift_cases(records, 600)
    neg = negative_lines()
    idx, bt, mem, _ret = timed_build(records)
    print(f"16.7k build {bt:.2f}s peak {mem:.1f}MB entries {len(idx)}", flush=True)
    results["methods"] = compare_methods(idx, cases, neg)
    q_lines = [c[0] for c in cases]
    sizes_wanted = [("16.7k", 0), ("100k", 100_000)]
    if "--1m" in sys.argv:
        sizes_wanted.append(("1M", 1_000_000))
    for label, n in sizes_wanted:
        items = synth_corpus(records, n) if n else records
        idx, bt, mem, ret = timed_build(items, trace=n <= 100_000)
        row: dict[str, object] = {
            "index_retained_mb": round(ret, 1),
            "templates": len(items),
            "entries": len(idx),
            "build_s": round(bt, 2),
            "build_peak_mb": round(mem, 1),
            **sizes(idx),
            "query": latency(idx, q_lines + neg),
            "recall@3": round(recall_at(idx, cases), 4),
            "recall@3_original_or_its_mutant": round(family_recall_at(idx, cases), 4),
            "false_suggestion_rate": round(false_rate(idx, neg), 4),
        }
        t0 = time.perf_counter()
        idx.query_many(q_lines)
        row["query_many_ms_per_line"] = round((time.perf_counter() - t0) * 1e3 / len(q_lines), 3)
        if label == "16.7k":
            row["eval_drifted"] = eval_drifted(idx, records)
            row["long_token_query_ms"] = long_token_query_ms(idx)
        results[label] = row
        print(label, row, flush=True)
        del idx, items
        gc.collect()
    results["n_drift_cases"] = len(cases)
    results["n_negative_lines"] = len(neg)
    out = REPO / "benchmarks" / "results" / "similar.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
