"""The pages of ``bench_pages.py`` against an older tree of the code, runs alternating.

A change that adds work to a page (issue 23's "one answer per error": evidence read from
the paste, alternatives under each card, more fields in the API's answer) is held to a
ratio against the code before it, not to an absolute budget: the machine is shared, so
only figures taken in the same minutes compare. Each round runs ``bench_pages.py --quick``
in the old tree, then in this one, each with its own database holding the full dataset
(the old tree's schema may differ); per case, the ratio is of the medians over the rounds
of each run's CPU p50 (the process's own CPU time, which a neighbour's load moves less
than wall time).

Run: ``.venv/bin/python benchmarks/pages_ab.py OLD_TREE --old-db=URL --new-db=URL
[--rounds=3]`` where OLD_TREE is a worktree of the older commit (``git worktree add
--detach /tmp/old-pages <commit>``, its ``.venv`` a link to this one's); ``--from=DIR``
summarises rounds already run (``DIR/old1/pages.json``, ``DIR/new1/pages.json``, ...).
Writes ``benchmarks/results/pages-ab.json``; not part of ``make bench`` (it needs the
old tree).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
# The dataset both trees read (bench_pages.py's own rule, from this tree): the same records.
DATA = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
BAR = 1.1  # new CPU p50 / old CPU p50, per paste page
PASTE_CASES = ("paste:", "API POST /api/match")  # the pages the bar is about


def _git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
    return done.stdout.strip()


def run_round(tree: Path, db: str, out: Path) -> None:
    env = {**os.environ, "DATABASE_URL": db, "KB_DATASET_DIR": str(DATA)}
    cmd = [str(REPO / ".venv" / "bin" / "python"), "benchmarks/bench_pages.py", "--quick"]
    subprocess.run([*cmd, f"--results={out}"], cwd=tree, env=env, check=True)


def cpu_p50(run: Path) -> dict[str, float]:
    cases = json.loads((run / "pages.json").read_text())["cases"]
    return {c["case"]: c["cpu_p50_ms"] for c in cases}


def summarise(where: Path, old_commit: str, new_commit: str) -> dict[str, Any]:
    rounds = sorted(int(p.name[3:]) for p in where.glob("old*") if p.name[3:].isdigit())
    rounds = [k for k in rounds if (where / f"new{k}" / "pages.json").exists()]
    if not rounds:
        raise SystemExit(f"no rounds in {where} (old1/pages.json and new1/pages.json ...)")
    old = [cpu_p50(where / f"old{k}") for k in rounds]
    new = [cpu_p50(where / f"new{k}") for k in rounds]
    results = []
    for case in old[0]:
        olds = [r[case] for r in old if case in r]
        news = [r[case] for r in new if case in r]
        if not news:
            continue
        ratio = statistics.median(news) / statistics.median(olds)
        paste = case.startswith(PASTE_CASES)
        results.append(
            {
                "case": case,
                "old_cpu_p50_ms": round(statistics.median(olds), 2),
                "new_cpu_p50_ms": round(statistics.median(news), 2),
                "ratio": round(ratio, 3),
                "old_rounds": olds,
                "new_rounds": news,
                "meets_bar": (ratio <= BAR) if paste else None,
            }
        )
    first = json.loads((where / f"old{rounds[0]}" / "pages.json").read_text())["meta"]
    return {
        "what": "bench_pages.py --quick in the older tree and in this one, alternating, in "
        "the same minutes; per case the median over the rounds of each run's CPU p50, and "
        "their ratio (new / old)",
        "bar": f"ratio <= {BAR} for the paste pages (htmx fragment, whole page, POST /api/match)",
        "old_commit": old_commit,
        "new_commit": new_commit,
        "rounds": len(rounds),
        "records": first.get("records"),
        "paste_bytes": first.get("paste_bytes"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpu",
        # the first round's: a result file summarised later still says when it ran
        "load_average": [round(x, 2) for x in first.get("load_average", ())],
        "when": first.get("when", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
        "results": results,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_tree", type=Path, help="a worktree of the older commit")
    parser.add_argument("--old-db", help="the old tree's bench database (DATABASE_URL)")
    parser.add_argument("--new-db", help="this tree's bench database (DATABASE_URL)")
    parser.add_argument("--rounds", type=int, default=3, help="old/new pairs of runs")
    parser.add_argument("--from", dest="done", type=Path, help="summarise rounds already run")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = parser.parse_args(argv)
    old_commit = _git(args.old_tree, "rev-parse", "--short", "HEAD")
    new_commit = _git(REPO, "rev-parse", "--short", "HEAD")
    where = args.done
    if where is None:
        if not (args.old_db and args.new_db):
            parser.error("--old-db and --new-db are needed to run rounds (or --from=DIR)")
        where = Path(tempfile.mkdtemp(prefix="pages-ab-"))
        for k in range(1, args.rounds + 1):
            run_round(args.old_tree, args.old_db, where / f"old{k}")
            run_round(REPO, args.new_db, where / f"new{k}")
    data = summarise(where, old_commit, new_commit)
    out = args.results / "pages-ab.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    paste = [r for r in data["results"] if r["meets_bar"] is not None]
    said = ", ".join(f"{r['case']} {r['ratio']}" for r in paste)
    print(f"{data['rounds']} rounds; paste pages new/old CPU p50: {said}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
