"""Throughput of the log normaliser (`kb.engine.normalise`) on whole logs.

The matcher normalises every paste before scanning it, so on a 50 MB log the normaliser
must cost a fraction of the scan (Hyperscan scans ~200 MB/s). Four synthetic 50 MB logs,
each ~398k lines with 1% error lines, deterministic (seeded):

* ``plain``  -- tracing-style timestamp/level/module lines; nothing to normalise;
* ``mixed``  -- plain, plus a 12-line Java stack trace after each error line;
* ``ansi``   -- plain with ANSI colour codes around timestamp, level and module (4/line);
* ``json``   -- zap-style JSON lines with escaped quotes in ``msg``/``error``.

For each: median wall and CPU (`process_time`) time of 3 `normalise` calls, MB/s (UTF-8
bytes of the input; on a shared, loaded machine the CPU figure is the meaningful one),
output/input size ratio, number of mapping segments, peak traced memory of one call, and
the cost of 1,000 `to_original` + `line_info` look-ups afterwards (after the original's line
index, built on the first `line_of` call, which is timed separately).

Envelopes (``--envelopes`` runs only these): a paste-sized log (`PASTE`) of the same
tracing-style lines, clean and wrapped in collector envelopes (``kubectl logs --prefix
--timestamps``, ``journalctl``, ``docker compose logs``, a CloudWatch export), each the same
size as the clean one: median CPU time of `normalise`, the enveloped/clean ratio in the same
run, and the enveloped paste at twice the size (time(2N)/time(N): the pass must stay linear).

Run: ``.venv/bin/python benchmarks/bench_normalise.py [--quick] [--envelopes]``
(``--quick`` uses 5 MB logs). Writes ``benchmarks/results/normalise.json`` and
``benchmarks/results/normalise_envelopes.json``.
"""

from __future__ import annotations

import gc
import json
import os
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kb.engine.normalise import normalise  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "normalise.json"
ENVELOPE_RESULTS = REPO / "benchmarks" / "results" / "normalise_envelopes.json"
PASTE = 256 * 1024

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


def measure(name: str, text: str, runs: int = 3) -> dict:
    mb = len(text.encode("utf-8")) / 1e6
    times = []
    cpu = []
    n = None
    for _ in range(runs):
        n = None
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        n = normalise(text)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert n is not None
    med = statistics.median(times)
    cpu_med = statistics.median(cpu)
    segments = sum(len(layer) for layer in n._layers)
    rng = random.Random(7)
    size = len(n.text)
    offs = [rng.randrange(max(size, 1)) for _ in range(1000)]
    c0 = time.process_time()
    n.line_of(0)  # builds the original's line index once
    index_s = time.process_time() - c0
    t0 = time.perf_counter()
    for o in offs:
        n.to_original(o, min(o + 20, size))
        n.line_info(o)
    lookup_us = (time.perf_counter() - t0) / len(offs) * 1e6
    del n
    gc.collect()
    tracemalloc.start()
    n = normalise(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out_ratio = len(n.text) / max(len(text), 1)
    row = {
        "log": name,
        "mb": round(mb, 1),
        "lines": text.count("\n"),
        "seconds_median": round(med, 3),
        "seconds_all": [round(t, 3) for t in times],
        "mb_per_s": round(mb / med, 1),
        "cpu_seconds_median": round(cpu_med, 3),
        "mb_per_cpu_s": round(mb / cpu_med, 1),
        "output_ratio": round(out_ratio, 3),
        "segments": segments,
        "peak_traced_mb": round(peak / 1e6, 1),
        "line_index_build_cpu_s": round(index_s, 3),
        "lookup_us": round(lookup_us, 1),
        "steps": n.steps,
    }
    print(
        f"| {name} | {row['mb']} | {row['seconds_median']:.3f} | {row['mb_per_s']} | "
        f"{row['cpu_seconds_median']:.3f} | {row['mb_per_cpu_s']} | "
        f"{row['output_ratio']} | {segments} | {row['peak_traced_mb']} | {row['lookup_us']} |",
        flush=True,
    )
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


def _cpu(text: str, runs: int = 7) -> float:
    cpu = []
    for _ in range(runs):
        gc.collect()
        c0 = time.process_time()
        normalise(text)
        cpu.append(time.process_time() - c0)
    return statistics.median(cpu)


def measure_envelopes() -> dict:
    """Enveloped pastes against a clean paste of the same size, in the same run."""
    rng = random.Random(11)
    clean = _paste_lines(PASTE, None, rng)
    base = _cpu(clean)
    rows = []
    print("| envelope | KiB | CPU ms clean | CPU ms enveloped | ratio | 2N/N | steps |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    texts = {
        name: (lambda n, p=p: _paste_lines(n, p, random.Random(11)))
        for name, p in ENVELOPES.items()
    }
    texts["CloudWatch export"] = lambda n: _cloudwatch(_paste_lines(n, None, random.Random(11)), n)
    for name, make in texts.items():
        text = make(PASTE)
        double = make(2 * PASTE)
        t = _cpu(text)
        t2 = _cpu(double)
        steps = normalise(text).steps
        row = {
            "envelope": name,
            "kib": round(len(text) / 1024, 1),
            "clean_cpu_ms": round(base * 1e3, 2),
            "enveloped_cpu_ms": round(t * 1e3, 2),
            "ratio_enveloped_to_clean": round(t / base, 2) if base else None,
            "ratio_2n_to_n": round(t2 / t, 2) if t else None,
            "steps": steps,
        }
        rows.append(row)
        print(
            f"| {name} | {row['kib']} | {row['clean_cpu_ms']} | {row['enveloped_cpu_ms']} | "
            f"{row['ratio_enveloped_to_clean']} | {row['ratio_2n_to_n']} | {'; '.join(steps)} |",
            flush=True,
        )
    result = {
        "benchmark": "normalise_envelopes",
        "python": sys.version.split()[0],
        "load_average_at_end": list(os.getloadavg()),
        "cpu_count": os.cpu_count(),
        "paste_bytes": PASTE,
        "rows": rows,
    }
    ENVELOPE_RESULTS.parent.mkdir(parents=True, exist_ok=True)
    ENVELOPE_RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {ENVELOPE_RESULTS.relative_to(REPO)}")
    return result


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    measure_envelopes()
    if "--envelopes" in argv:
        return 0
    target = 5_000_000 if quick else 50_000_000
    rng = random.Random(42)
    logs = {
        "plain": make_plain(target, rng),
        "mixed": make_plain(target, rng, traces=True),
        "ansi": make_ansi(target, rng),
        "json": make_json(target, rng),
    }
    print(
        "| log | MB | wall s (median of 3) | MB/s | CPU s | MB/CPU-s | out/in | segments "
        "| peak MB | lookup µs |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    rows = [measure(name, text) for name, text in logs.items()]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "normalise",
                "quick": quick,
                "python": sys.version.split()[0],
                "load_average_at_end": list(os.getloadavg()),
                "cpu_count": os.cpu_count(),
                "note": "wall time is inflated when the machine is shared; CPU time "
                "(process_time) is the better figure under load",
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
