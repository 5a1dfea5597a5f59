"""Matcher memory and paste latency with older wordings (aliases) compiled beside the
records, against the same records without them, in one run (issue 26's scale goal: within
1.3x of the matcher without aliases).

Aliases: the dataset ships no learned histories, so each alias is made as the learner's
look: an older wording of a real record, its message with 1-3 words replaced or inserted
(``matcher_data.synthesise``: real templates mutated with the records' own vocabulary,
re-escaped like a messagePattern), attached to the record it was made from. 0, 2,000 and
5,000 aliases over the 16.7k real records (the five repositories' histories bring a few
thousand).

Memory: each variant is loaded from its cache file in a fresh child process, whose RSS
after the load minus its RSS just before is the matcher's (the variants never share a
heap). Latency: the three matchers in this process, their values taken in turn
(``timing.time_alternating``, so a neighbour's burst on this shared machine hits every
side), CPU time: a batch of lines in today's wordings (the same input for every variant),
a batch in the older wordings (matched only where aliases are compiled), and a 256 KiB
paste.

Run: ``.venv/bin/python benchmarks/bench_aliases.py [--quick] [--results=DIR]``; writes
``benchmarks/results/aliases.json`` and the raw values beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import timing  # noqa: E402 - beside this file, found through the line above
from matcher_data import load_specs, make_lines, render, synthesise  # noqa: E402

from kb.engine import Matcher, PatternSpec, cache  # noqa: E402
from kb.engine.types import Wording  # noqa: E402
from tests.engine.redos_inputs import paste_256k  # noqa: E402

CACHE = REPO / ".cache" / "matcher-bench-aliases"
RESULTS = REPO / "benchmarks" / "results"
COUNTS = (0, 2000, 5000)
GOAL = 1.3  # times the matcher without aliases, for memory and paste latency


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def with_aliases(specs: list[PatternSpec], n: int, seed: int = 26) -> list[PatternSpec]:
    """``specs`` with ``n`` older wordings spread over them, one per record at most."""
    if n == 0:
        return specs
    by_message: dict[str, list[int]] = {}
    for i, s in enumerate(specs):
        by_message.setdefault(s.message, []).append(i)
    extra: dict[int, Wording] = {}
    rng = random.Random(seed)
    for mutant in synthesise(specs, 3 * n, seed=seed):
        if len(extra) >= n:
            break
        free = [i for i in by_message.get(mutant.message, ()) if i not in extra]
        if free:
            i = rng.choice(free)
            extra[i] = Wording(mutant.pattern, mutant.message, "1.0.0", "1.9.9")
    return [
        PatternSpec(s.key, s.pattern, s.message, aliases=(extra[i],)) if i in extra else s
        for i, s in enumerate(specs)
    ]


def build(specs: list[PatternSpec]) -> Matcher:
    return Matcher.build(specs, cache_dir=CACHE, workers=os.cpu_count() or 1)


def file_of(specs: list[PatternSpec]) -> Path:
    """The cache file `build` wrote for ``specs``."""
    return cache.matcher_path(CACHE, cache.specs_digest(specs, cache.build_options(None, True)))


def child(path: Path, lines_file: Path) -> None:
    """Print the RSS the matcher file ``path`` adds to this fresh process once loaded,
    and after matching the lines of ``lines_file`` (the analyses a worker builds as
    pastes come in); nothing else is loaded first, so no freed memory is reused."""
    lines = lines_file.read_text(encoding="utf-8").splitlines()
    gc.collect()
    before = rss_mb()
    m = Matcher.load(path)
    assert m is not None, path
    gc.collect()
    after = rss_mb()
    for line in lines:
        m.match(line)
    gc.collect()
    print(
        json.dumps(
            {
                "rss_mb_matcher": round(after - before, 1),
                "rss_mb_after_200_lines": round(rss_mb() - before, 1),
                # the matcher's file and the shard files it names
                "file_mb": round(
                    sum(
                        p.stat().st_size
                        for p in [path, *(path.parent / n for n in m.shard_files())]
                    )
                    / 2**20,
                    1,
                ),
                "rss_mb_process": round(rss_mb(), 1),
            }
        )
    )


def memory(specs: list[PatternSpec], lines_file: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(file_of(specs)), "--lines", str(lines_file)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def old_lines(specs: list[PatternSpec], n: int, seed: int = 4) -> list[str]:
    """Log lines in the older wordings (rendered alias templates)."""
    rng = random.Random(seed)
    olds = [PatternSpec(s.key, w.pattern, w.message) for s in specs for w in s.aliases]
    return [
        f"2026-11-30T01:00:{i % 60:02d}Z ERROR app::module: {render(rng.choice(olds), rng)}"
        for i in range(n)
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer values")
    ap.add_argument("--full", action="store_true", help="(no larger set: same as default)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--lines", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.lines)
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    real = load_specs()
    variants = {n: with_aliases(real, n) for n in COUNTS}
    kept: list = []
    res: dict[str, dict] = {}
    matchers: dict[int, Matcher] = {}
    for n, specs in variants.items():
        first = timing.time_once(f"{n} aliases: build", lambda specs=specs: build(specs))
        kept += first.benchmarks
        m = first.result
        matchers[n] = m
        res[str(n)] = {
            "aliases": int(m.stats.get("aliases", 0)),
            "aliases_refused": int(m.stats.get("aliases_refused", 0)),
            "patterns": int(m.stats["patterns"]),
            "build_s": round(first.wall.median(), 2),
            "built_from_cache": bool(m.stats.get("matcher_from_cache")),
        }
        print(f"{n} aliases: {res[str(n)]}", flush=True)
    gc.collect()
    gc.freeze()  # as the app does after a build (kb.matching.holder)
    values = 3 if args.quick else 7
    today = make_lines(real, 200)
    older = old_lines(variants[max(COUNTS)], 200)
    paste = paste_256k()

    def batch(m: Matcher, lines: list[str]):
        return lambda: [m.match(x) for x in lines]

    for name, lines in (("today's wordings", today), ("older wordings", older)):
        for m in matchers.values():
            batch(m, lines[:20])()  # warm the code paths and the lines' analyses
        got = timing.time_alternating(
            {f"{n} aliases: 200 lines, {name}": batch(m, lines) for n, m in matchers.items()},
            values=values,
        )
        for n in COUNTS:
            t = got[f"{n} aliases: 200 lines, {name}"]
            kept += t.benchmarks
            key = "line_cpu_us" if name == "today's wordings" else "old_line_cpu_us"
            res[str(n)][key] = round(t.cpu.median() / len(lines) * 1e6, 1)
            if key == "old_line_cpu_us":
                matched = sum(bool(r.matches) for r in t.result)
                res[str(n)]["old_lines_matched"] = matched
    got = timing.time_alternating(
        {f"{n} aliases: 256 KiB paste": (lambda m=m: m.match(paste)) for n, m in matchers.items()},
        values=values,
    )
    for n in COUNTS:
        t = got[f"{n} aliases: 256 KiB paste"]
        kept += t.benchmarks
        res[str(n)]["paste_256k_cpu_ms"] = round(t.cpu.median() * 1000, 1)
    gc.unfreeze()
    del matchers
    lines_file = CACHE / "lines.txt"
    lines_file.write_text("\n".join(today[:100] + older[:100]) + "\n", encoding="utf-8")
    for _ in range(2):  # twice, in turn: the RSS of a child varies a little run to run
        for n in COUNTS:
            got_mem = memory(variants[n], lines_file)
            for k, v in got_mem.items():
                res[str(n)].setdefault(f"{k}_runs", []).append(v)
    for n in COUNTS:
        r = res[str(n)]
        r["rss_mb_matcher"] = min(r["rss_mb_matcher_runs"])
        r["rss_mb_after_200_lines"] = min(r["rss_mb_after_200_lines_runs"])
        r["file_mb"] = r.pop("file_mb_runs")[0]
        r["rss_mb_process"] = min(r.pop("rss_mb_process_runs"))
        print(f"{n} aliases: {res[str(n)]}", flush=True)
    base = res["0"]
    ratios = {
        str(n): {
            "memory": round(res[str(n)]["rss_mb_matcher"] / base["rss_mb_matcher"], 2),
            "memory_after_lines": round(
                res[str(n)]["rss_mb_after_200_lines"] / base["rss_mb_after_200_lines"], 2
            ),
            "process_memory": round(res[str(n)]["rss_mb_process"] / base["rss_mb_process"], 2),
            "line_cpu": round(res[str(n)]["line_cpu_us"] / base["line_cpu_us"], 2),
            "paste_256k_cpu": round(
                res[str(n)]["paste_256k_cpu_ms"] / base["paste_256k_cpu_ms"], 2
            ),
        }
        for n in COUNTS
        if n
    }
    out = args.results / "aliases.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    method = (
        "latency: CPU medians of values taken in turn (timing.time_alternating); memory: RSS "
        "a loaded matcher adds to a fresh child process; builds timed once"
    )
    goals = {"ratio_to_no_aliases": f"<= {GOAL} (memory, line latency, 256 KiB paste)"}
    out.write_text(
        json.dumps(
            {
                "goals": goals,
                "method": method,
                "records": len(real),
                "results": res,
                "ratios": ratios,
            },
            indent=2,
        )
        + "\n"
    )
    raw = timing.dump("aliases", kept, args.results)
    print(f"ratios to no aliases: {ratios}; wrote {out} and {raw.name}")


if __name__ == "__main__":
    main()
