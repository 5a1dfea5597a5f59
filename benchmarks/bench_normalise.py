"""Throughput of the log normaliser (`kb.engine.normalise`) on whole logs.

The matcher normalises every paste before scanning it, so on a 50 MB log the normaliser
must cost a fraction of the scan (Hyperscan scans ~200 MB/s). Four synthetic 50 MB logs,
each ~398k lines with 1% error lines, deterministic (seeded):

* ``plain``  -- tracing-style timestamp/level/module lines; nothing to normalise;
* ``mixed``  -- plain, plus a 12-line Java stack trace after each error line;
* ``ansi``   -- plain with ANSI colour codes around timestamp, level and module (4/line);
* ``json``   -- zap-style JSON lines with escaped quotes in ``msg``/``error``.

For each: median wall and CPU (`process_time`) time of `normalise` (``VALUES`` values after
a warm-up, timed by ``benchmarks/timing.py``), MB/s (UTF-8 bytes of the input; on a shared,
loaded machine the CPU figure is the meaningful one), output/input size ratio, number of
mapping segments, peak traced memory of one call, and the cost of 1,000 `to_original` +
`line_info` look-ups afterwards (after the original's line index, built on the first
`line_of` call, which is timed separately).

Envelopes (``--envelopes`` runs only these): a paste-sized log (`PASTE`) of the same
tracing-style lines, clean and wrapped in collector envelopes (``kubectl logs --prefix
--timestamps``, ``journalctl``, ``docker compose logs``, a CloudWatch export), each the same
size as the clean one: median CPU time of `normalise`, the enveloped/clean ratio (the
clean paste, the enveloped one and the enveloped one at twice the size timed in turn, value
by value, and whether the difference is significant as ``pyperf compare_to`` judges it),
and time(2N)/time(N) (the pass must stay linear).

Run: ``.venv/bin/python benchmarks/bench_normalise.py [--quick] [--envelopes]
[--results=DIR]`` (``--quick`` uses 5 MB logs). Writes ``normalise.json`` and
``normalise_envelopes.json`` into ``benchmarks/results/`` (or ``DIR``), each with its
timings' raw values beside it (``<name>.pyperf.json``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import tracemalloc
from pathlib import Path

import pyperf

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import timing  # noqa: E402 - beside this file, found through the line above

from kb.engine.normalise import normalise  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
PASTE = 256 * 1024
VALUES = 5  # values of a whole log (each one call of up to a few seconds)
ENVELOPE_VALUES = 7  # values of a paste (each the mean of calibrated loops)

MODULES = [
    "risingwave_rpc_client::meta_client",
    "risingwave_meta::barrier",
    "risingwave_stream::executor::merge",
    "risingwave_storage::hummock::compactor",
]
WORDS = ["epoch", "actor", "barrier", "commit", "snapshot", "table", "fragment", "compaction"]


def _ts(i: int) -> str:
    return f"2024-01-26T05:{(i // 3600) % 60:02d}:{(i // 60) % 60:02d}.{i:09d}Z"


def _message(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(6))
    return f"processed {words} id={i} elapsed={rng.randint(1, 999)}ms ok=true"


def make_plain(target: int, rng: random.Random, *, traces: bool = False) -> str:
    out: list[str] = []
    size = 0
    i = 0
    while size < target:
        mod = MODULES[i % len(MODULES)]
        if rng.random() < 0.01:
            line = (
                f"{_ts(i)} ERROR {mod}: Failed to connect to meta server 127.0.0.1:5690, "
                f"trying again error=transport error: connection refused (os error 111)"
            )
            out.append(line)
            size += len(line) + 1
            if traces:
                trace = [
                    "org.apache.kafka.common.KafkaException: Failed to construct kafka consumer"
                ]
                trace += [f"\tat org.apache.kafka.C{k}.run(C{k}.java:{k})" for k in range(9)]
                trace += ["Caused by: java.net.ConnectException: refused", "\t... 12 more"]
                out.extend(trace)
                size += sum(len(t) + 1 for t in trace)
        else:
            line = f"{_ts(i)}  INFO {mod}: {_message(rng, i)}"
            out.append(line)
            size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def make_ansi(target: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    i = 0
    while size < target:
        mod = MODULES[i % len(MODULES)]
        err = rng.random() < 0.01
        lvl = "\x1b[31mERROR\x1b[0m" if err else "\x1b[32m INFO\x1b[0m"
        msg = "Failed to connect to meta server 127.0.0.1:5690" if err else _message(rng, i)
        line = f"\x1b[2m{_ts(i)}\x1b[0m {lvl} \x1b[2m{mod}\x1b[0m: {msg}"
        out.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def make_json(target: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    i = 0
    while size < target:
        err = rng.random() < 0.01
        rec = {
            "level": "error" if err else "info",
            "ts": _ts(i),
            "caller": f"rafthttp/stream.go:{i % 500}",
            "msg": "lost TCP streaming connection with remote peer"
            if err
            else f'applied "{rng.choice(WORDS)}" entries {_message(rng, i)}',
            "local-member-id": f"{rng.getrandbits(64):016x}",
        }
        if err:
            rec["error"] = 'read tcp "10.0.0.1:2380": connection reset by peer'
        line = json.dumps(rec, separators=(",", ":"))
        out.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def measure(name: str, text: str, timings: list[pyperf.Benchmark]) -> dict:
    mb = len(text.encode("utf-8")) / 1e6
    whole = timing.time_call(f"normalise {name}", lambda: normalise(text), values=VALUES)
    n = whole.result
    segments = sum(len(layer) for layer in n._layers)
    rng = random.Random(7)
    size = len(n.text)
    offs = [rng.randrange(max(size, 1)) for _ in range(1000)]
    index = timing.time_once(f"line index {name}", lambda: n.line_of(0))  # built once

    def lookups() -> None:
        for o in offs:
            n.to_original(o, min(o + 20, size))
            n.line_info(o)

    lookup = timing.time_call(f"1000 look-ups {name}", lookups)
    timings += [*whole.benchmarks, index.cpu, *lookup.benchmarks]
    wall, cpu, steps = whole.wall, whole.cpu, n.steps
    del n, whole  # the last call's result: a 50 MB log's worth of memory
    gc.collect()
    tracemalloc.start()
    n = normalise(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out_ratio = len(n.text) / max(len(text), 1)
    med, cpu_med = wall.median(), cpu.median()
    row = {
        "log": name,
        "mb": round(mb, 1),
        "lines": text.count("\n"),
        "seconds_median": round(med, 3),
        "seconds_all": [round(t, 3) for t in wall.get_values()],
        "mb_per_s": round(mb / med, 1),
        "cpu_seconds_median": round(cpu_med, 3),
        "mb_per_cpu_s": round(mb / cpu_med, 1),
        "cpu_seconds": timing.summary(cpu),
        "output_ratio": round(out_ratio, 3),
        "segments": segments,
        "peak_traced_mb": round(peak / 1e6, 1),
        "line_index_build_cpu_s": round(index.cpu.median(), 3),
        "lookup_us": round(lookup.wall.median() / len(offs) * 1e6, 1),
        "steps": steps,
    }
    return row


ENVELOPES = {
    "kubectl --prefix --timestamps": lambda i: f"[pod/api-7d9f8b6c5-xk2lp/api] {_ts(i)} ",
    "journalctl": lambda i: f"Jan 26 05:{(i // 60) % 60:02d}:{i % 60:02d} node-1 api[1234]: ",
    "docker compose logs": lambda i: "api-1  | ",
}


def _paste_lines(target: int, prefix, rng: random.Random) -> str:
    """Paste-sized log of tracing lines (an error wrapped over two lines every 50), each
    physical line under ``prefix(i)`` (or bare), cut at ``target`` characters."""
    out: list[str] = []
    size = 0
    i = 0
    while size < target:
        mod = MODULES[i % len(MODULES)]
        if i % 50 == 49:
            lines = [
                f"2024-01-26T05:40:23.{i:09d}Z  WARN {mod}: Failed to connect to meta server "
                "127.0.0.1:5690,",
                "trying again error=transport error: connection refused",
            ]
        else:
            lines = [f"2024-01-26T05:40:23.{i:09d}Z  INFO {mod}: {_message(rng, i)}"]
        for line in lines:
            line = (prefix(i) if prefix else "") + line
            out.append(line)
            size += len(line) + 1
        i += 1
    return ("\n".join(out) + "\n")[:target]


def _cloudwatch(text: str, target: int) -> str:
    out: list[str] = []
    size = 0
    for i, line in enumerate(text.split("\n")):
        obj = json.dumps({"timestamp": 1706247623000 + i, "message": line}, separators=(",", ":"))
        out.append(obj)
        size += len(obj) + 1
        if size >= target:
            break
    return "\n".join(out) + "\n"


def measure_envelopes(results: Path) -> dict:
    """Enveloped pastes against a clean paste of the same size, timed in turn."""
    clean = _paste_lines(PASTE, None, random.Random(11))
    rows = []
    timings: list[pyperf.Benchmark] = []
    texts = {
        name: (lambda n, p=p: _paste_lines(n, p, random.Random(11)))
        for name, p in ENVELOPES.items()
    }
    texts["CloudWatch export"] = lambda n: _cloudwatch(_paste_lines(n, None, random.Random(11)), n)
    for name, make in texts.items():
        text = make(PASTE)
        double = make(2 * PASTE)
        sides = timing.time_alternating(
            {
                f"clean beside {name}": lambda: normalise(clean),
                name: lambda text=text: normalise(text),
                f"{name} at 2N": lambda double=double: normalise(double),
            },
            values=ENVELOPE_VALUES,
        )
        base, one, two = (side.cpu for side in sides.values())
        timings += [b for side in sides.values() for b in side.benchmarks]
        t, t2, b = one.median(), two.median(), base.median()
        row = {
            "envelope": name,
            "kib": round(len(text) / 1024, 1),
            "clean_cpu_ms": round(b * 1e3, 2),
            "enveloped_cpu_ms": round(t * 1e3, 2),
            "ratio_enveloped_to_clean": round(t / b, 2),
            "enveloped_vs_clean": timing.compare(base, one),
            "ratio_2n_to_n": round(t2 / t, 2),
            "steps": sides[name].result.steps,
        }
        rows.append(row)
    result = {
        "benchmark": "normalise_envelopes",
        "python": sys.version.split()[0],
        "load_average_at_end": list(os.getloadavg()),
        "cpu_count": os.cpu_count(),
        "paste_bytes": PASTE,
        "method": f"median CPU time of {ENVELOPE_VALUES} values each (benchmarks/timing.py)",
        "rows": rows,
    }
    ratios = ", ".join(f"{r['envelope']} {r['ratio_enveloped_to_clean']}" for r in rows)
    _write(results, "normalise_envelopes", result, timings, f"enveloped ÷ clean: {ratios}")
    return result


def _write(
    results: Path, name: str, result: dict, timings: list[pyperf.Benchmark], headline: str
) -> None:
    out = results / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    raw = timing.dump(name, timings, results)
    print(f"{headline}; wrote {out} and {raw.name}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 MB logs instead of 50 MB")
    parser.add_argument("--envelopes", action="store_true", help="the envelopes only")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write")
    args = parser.parse_args(argv)
    measure_envelopes(args.results)
    if args.envelopes:
        return 0
    target = 5_000_000 if args.quick else 50_000_000
    rng = random.Random(42)
    logs = {
        "plain": make_plain(target, rng),
        "mixed": make_plain(target, rng, traces=True),
        "ansi": make_ansi(target, rng),
        "json": make_json(target, rng),
    }
    timings: list[pyperf.Benchmark] = []
    rows = [measure(name, text, timings) for name, text in logs.items()]
    result = {
        "benchmark": "normalise",
        "quick": args.quick,
        "python": sys.version.split()[0],
        "load_average_at_end": list(os.getloadavg()),
        "cpu_count": os.cpu_count(),
        "note": "wall time is inflated when the machine is shared; CPU time "
        "(process_time) is the better figure under load",
        "method": f"median of {VALUES} values after a warm-up (benchmarks/timing.py)",
        "rows": rows,
    }
    rates = ", ".join(f"{r['log']} {r['mb_per_cpu_s']}" for r in rows)
    _write(args.results, "normalise", result, timings, f"MB per CPU s: {rates}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
