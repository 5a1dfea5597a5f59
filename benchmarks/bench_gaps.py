"""Which gap-folding method clusters real pastes better: measured on the public labelled set.

Each labelled paste (``eval-public.jsonl``: the record template it should match) goes the
way a report would: its error lines (`kb.loop.text.error_lines`), redacted
(`kb.loop.text.redact`), the headline's template (`kb.loop.text.gaps`), filed into a
`GapIndex` one report at a time. Pairs of pastes of the same record template must land in
one gap (recall), pairs of different templates must not (precision); pastes with no
template (the negative stratum) are each their own label. Pairwise precision, recall and
F1 are averaged over several report orders (online folding depends on order), for each
method across a threshold sweep; the method and threshold with the best F1 win.

Also: for each multi-report gap of the winner, whether the draft pattern derived from its
template (`kb.loop.text.derive`) matches every sample; and the folding work per report
(gaps compared) as the number of gaps grows.

Times (the admission of each draft, the folding of each report) are one value per item,
taken by ``benchmarks/timing.py``.

Run: ``.venv/bin/python benchmarks/bench_gaps.py [--quick] [--results=DIR]`` (``--quick``:
the work per report at 1k and 10k gaps, not 100k); writes ``benchmarks/results/gaps.json``
(or into DIR), with the timings' raw values beside it (``gaps.pyperf.json``). Dataset
directory: env ``KB_DATASET_DIR`` (default: ``shared/data`` beside the repo).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from itertools import combinations
from pathlib import Path

import pyperf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (str(REPO), str(HERE)):  # kb, and timing beside this file
    if _path not in sys.path:
        sys.path.insert(0, _path)

import timing  # noqa: E402

from kb.engine import admit_pattern  # noqa: E402
from kb.loop.text import gaps as gaps_mod  # noqa: E402
from kb.loop.text.derive import pattern_from_template  # noqa: E402
from kb.loop.text.error_lines import find_error_lines  # noqa: E402
from kb.loop.text.gaps import GapIndex, headline, template_of  # noqa: E402
from kb.loop.text.redact import redact  # noqa: E402

DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
EVAL = DATASET_DIR / "eval-public.jsonl"
OUT = HERE / "results" / "gaps.json"
ORDERS = 10
_FUZZY = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
# (method, scorer) -> thresholds; the scorer only matters to ``fuzzy``.
SWEEP = {
    ("exact", "ratio"): [1.0],
    **{("fuzzy", scorer): _FUZZY for scorer in gaps_mod.SCORERS},
    ("drain", "ratio"): [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
}


def load_cases() -> list[dict]:
    with EVAL.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def reports(cases: list[dict]) -> list[tuple[str, str, str]]:
    """(label, template, redacted headline) per paste that has an error line."""
    out = []
    for case in cases:
        lines = find_error_lines(case["text"])
        head = headline(lines)
        if head is None:
            continue
        sample = redact(head.text).text
        label = case["template"] if case["template"] is not None else f"none:{case['id']}"
        out.append((label, template_of(sample), sample))
    return out


def pairwise(labels: list[str], clusters: list[int]) -> dict[str, float]:
    tp = fp = fn = 0
    for (la, ca), (lb, cb) in combinations(zip(labels, clusters, strict=True), 2):
        same_label, same_cluster = la == lb, ca == cb
        tp += same_label and same_cluster
        fp += same_cluster and not same_label
        fn += same_label and not same_cluster
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f1}


def fold(items: list[tuple[str, str, str]], method: tuple[str, str], threshold: float) -> list[int]:
    index = GapIndex(method[0], threshold, method[1])
    return [index.add(template, sample).id for _, template, sample in items]


def evaluate(items: list[tuple[str, str, str]], method: tuple[str, str], threshold: float) -> dict:
    rng = random.Random(12)
    scores = []
    for k in range(ORDERS):
        order = list(items)
        if k:
            rng.shuffle(order)
        scores.append(pairwise([i[0] for i in order], fold(order, method, threshold)))
    mean = {m: round(sum(s[m] for s in scores) / len(scores), 4) for m in scores[0]}
    mean["gaps"] = len(set(fold(items, method, threshold)))
    return mean


def derive_check(
    items: list[tuple[str, str, str]],
    method: tuple[str, str],
    threshold: float,
    kept: list[pyperf.Benchmark],
) -> dict:
    index = GapIndex(method[0], threshold, method[1])
    for _, template, sample in items:
        index.add(template, sample)
    multi = [g for g in index.gaps if len(g.samples) >= 2]
    patterns = []
    for gap in multi:
        try:
            patterns.append(pattern_from_template(gap.template, gap.samples))
        except ValueError:
            continue
    out = {
        "gaps_with_2_or_more_samples": len(multi),
        "draft_pattern_matches_all": len(patterns),
        "draft_admitted_by_matcher": 0,
        "admission_compile_s_median": None,
        "admission_compile_s_max": None,
    }
    if patterns:
        admission = timing.time_each("admission of a draft", admit_pattern, patterns)
        kept += admission.benchmarks
        out["draft_admitted_by_matcher"] = sum(a.ok for a in admission.result)
        out["admission_compile_s_median"] = round(admission.wall.median(), 3)
        out["admission_compile_s_max"] = round(admission.wall.percentile(100), 3)
    return out


def work_per_report(
    kept: list[pyperf.Benchmark], sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
) -> dict:
    """Gaps compared per report (fuzzy) as the index grows: blocking keeps it flat."""
    rng = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(7)) for _ in range(5000)]
    out = {}
    for size in sizes:
        index = GapIndex("fuzzy")
        for _ in range(size):
            gap = gaps_mod.Gap(0, " ".join(rng.choice(vocab) for _ in range(8)))
            index.load([gap])
        probes = [" ".join(rng.choice(vocab) for _ in range(8)) for _ in range(200)]

        def report(probe: str, index: GapIndex = index) -> int:
            compared = index.candidates(probe)
            index.find(probe)
            return compared

        folding = timing.time_each(f"a report against {size} gaps", report, probes)
        kept += folding.benchmarks
        compared = folding.result
        out[str(size)] = {
            "max_gaps_compared": max(compared),
            "mean_gaps_compared": round(sum(compared) / len(compared), 1),
            "ms_per_report": round(folding.wall.mean() * 1000, 3),
        }
    return out


MIN_PRECISION = 0.9


def _choose(sweep: dict[str, dict]) -> str:
    """A wrong fold hides an error from curators; a missed one only shows it twice. So:
    the best F1 among thresholds whose precision, and the precision one step looser,
    reach MIN_PRECISION (a margin: the labelled set is small); best F1 if none does."""
    ts = list(sweep)
    safe = [
        t
        for k, t in enumerate(ts)
        if sweep[t]["precision"] >= MIN_PRECISION
        and (k == 0 or sweep[ts[k - 1]]["precision"] >= MIN_PRECISION)
    ] or ts
    return max(safe, key=lambda t: (sweep[t]["f1"], sweep[t]["precision"]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no 100k-gap index")
    parser.add_argument("--results", type=Path, default=OUT.parent, help="where to write")
    args = parser.parse_args(argv)
    kept: list[pyperf.Benchmark] = []
    if not EVAL.is_file():
        print(f"bench_gaps: no labelled set at {EVAL} (set KB_DATASET_DIR); nothing measured")
        return 0
    cases = load_cases()
    items = reports(cases)
    labels = [i[0] for i in items]
    same_pairs = sum(a == b for a, b in combinations(labels, 2))
    methods: dict[str, dict] = {}
    for method, thresholds in SWEEP.items():
        sweep = {str(t): evaluate(items, method, t) for t in thresholds}
        best_t = _choose(sweep)
        name = method[0] if method[0] != "fuzzy" else f"fuzzy:{method[1]}"
        methods[name] = {"best_threshold": float(best_t), "best": sweep[best_t], "sweep": sweep}
    winner = max(methods, key=lambda m: methods[m]["best"]["f1"])
    winner_method = (winner.split(":")[0], winner.split(":")[1] if ":" in winner else "ratio")
    result = {
        "dataset": str(EVAL.name),
        "pastes": len(cases),
        "reports_with_error_lines": len(items),
        "labels": len(set(labels)),
        "same_label_pairs": same_pairs,
        "orders_averaged": ORDERS,
        "rule": (
            f"per method, the best F1 among thresholds with precision >= {MIN_PRECISION}"
            " there and one step looser"
        ),
        "methods": methods,
        "chosen": {
            "method": winner,
            "threshold": methods[winner]["best_threshold"],
            "in_code": {
                "method": gaps_mod.DEFAULT_METHOD,
                "scorer": gaps_mod.DEFAULT_SCORER,
                "threshold": gaps_mod.DEFAULT_THRESHOLD,
            },
        },
        "derive": derive_check(items, winner_method, methods[winner]["best_threshold"], kept),
        "fuzzy_work_per_report": work_per_report(
            kept, (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
        ),
    }
    out = args.results / OUT.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    raw = timing.dump("gaps", kept, args.results)
    best = methods[winner]["best"]
    print(
        f"chosen: {winner} at {methods[winner]['best_threshold']} (F1 {best['f1']:.3f} of "
        f"{len(methods)} methods); wrote {out} and {raw.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
