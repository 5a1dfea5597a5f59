"""How often the code explains its error: ``kb.explain`` over every record of the dataset.

For each language and each repository: the share of records with a snippet for which the
enclosing function was found, a condition was found, both, interpolated values, the
message is an error type's declaration, and any sentence at all to show; and
the per-record time (p50/p99) of one explanation.

Run: ``.venv/bin/python benchmarks/bench_explain.py [--quick] [--results=DIR]``
(``--quick``: one record in ten). Writes ``benchmarks/results/explain.json`` (or into
DIR), with the per-record times' raw values beside it (``explain.pyperf.json``; one value
per record, timed by ``benchmarks/timing.py``). Dataset directory: env ``KB_DATASET_DIR``
(default: ``shared/data`` beside the repo), file ``records-all.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (str(REPO), str(HERE)):  # kb, and timing beside this file
    if _path not in sys.path:
        sys.path.insert(0, _path)

import timing  # noqa: E402

from kb.browse.highlight import language_for  # noqa: E402
from kb.explain import explain  # noqa: E402

DATASET_DIR = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
RESULTS = HERE / "results"
LANGUAGES = {".rs": "rust", ".java": "java", ".go": "go", ".py": "python", ".scala": "scala"}
KINDS = ("function", "condition", "both", "values", "declared", "sentence")


def load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["record"] for line in handle if line.strip()]


def explain_record(record: dict) -> object:
    return explain(
        record["sourceCode"],
        language=language_for(record["filePath"]),
        first_line=record["sourceCodeStart"],
        site_line=record["lineNumber"],
        message=record["errorMessage"],
    )


def flags_of(found: object) -> dict[str, bool]:
    function = bool(found and found.function)
    condition = bool(found and found.condition)
    return {
        "function": function,
        "condition": condition,
        "both": function and condition,
        "values": bool(found and found.values),
        # the message belongs to an error type's declaration (``#[error]``, enum constant)
        "declared": bool(found and found.declared),
        # anything at all to show: the page renders this sentence
        "sentence": bool(found and found.sentence()),
    }


def share(rows: list[dict[str, bool]]) -> dict[str, float | int]:
    out: dict[str, float | int] = {"records": len(rows)}
    for kind in KINDS:
        out[kind] = round(sum(r[kind] for r in rows) / len(rows), 4) if rows else 0.0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one record in ten")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = parser.parse_args()
    source = DATASET_DIR / "records-all.jsonl"
    if not source.exists():
        print(f"bench_explain: no {source} (set KB_DATASET_DIR); nothing measured")
        return 0
    records = [r for r in load(source) if r.get("sourceCode")]
    if args.quick:
        records = records[::10]
    by_language: dict[str, list[dict[str, bool]]] = defaultdict(list)
    by_repo: dict[str, list[dict[str, bool]]] = defaultdict(list)
    times: dict[str, list[float]] = defaultdict(list)
    each = timing.time_each("explain, one record", explain_record, records)
    for record, found, elapsed in zip(records, each.result, each.wall.get_values(), strict=True):
        language = LANGUAGES.get(language_for(record["filePath"]), "other")
        flags = flags_of(found)
        by_language[language].append(flags)
        by_repo[f"{record['repo']} ({language})"].append(flags)
        times[language].append(elapsed)
        times["all"].append(elapsed)
    per_language = {
        k: timing.from_values(f"explain, one {k} record", v, "time.perf_counter()")
        for k, v in sorted(times.items())
    }
    result = {
        "dataset": source.name,
        "records_with_snippet": len(records),
        "languages": {k: share(v) for k, v in sorted(by_language.items())},
        "repos": {k: share(v) for k, v in sorted(by_repo.items())},
        "all": share([f for rows in by_language.values() for f in rows]),
        "time_per_record_ms": {
            k: {"p50": round(b.median() * 1e3, 3), "p99": round(b.percentile(99) * 1e3, 3)}
            for k, b in per_language.items()
        },
    }
    if args.quick:
        result["quick"] = "one record in ten"
    out = args.results / "explain.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    raw = timing.dump("explain", [*each.benchmarks, *per_language.values()], args.results)
    every, t = result["all"], result["time_per_record_ms"]["all"]
    print(
        f"{every['records']} records: function {every['function']:.1%}, condition "
        f"{every['condition']:.1%}, any sentence {every['sentence']:.1%}; p50 {t['p50']} ms "
        f"a record; wrote {out} and {raw.name}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
