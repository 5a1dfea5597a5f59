"""How the benchmarks time Python code: pyperf's machinery, in this process.

A timing is a ``pyperf.Benchmark``: loops calibrated as ``pyperf.Runner`` does (doubled
until one value lasts at least ``MIN_TIME``), warm-ups first, then several values, each
the mean of its loops; the median, percentiles and standard deviation are pyperf's own,
from ``Benchmark.get_values()``. Each value is taken on two clocks at once, wall
(``perf_counter``, pyperf's) and CPU (``process_time``): on a shared machine another
process's burst lands in the wall time and mostly not in the CPU time, so the benchmarks
lead with CPU figures. Two timings of one run are compared as ``pyperf compare_to`` does
(:func:`compare`: the ratio of means and of medians, and Student's two-sample t-test at
95% for whether the difference is significant), and :func:`dump` writes a run's timings
as a ``pyperf.BenchmarkSuite`` to ``benchmarks/results/<name>.pyperf.json``, which
``python -m pyperf stats|hist|compare_to`` read.

In process, not ``pyperf.Runner``: the Runner spawns worker processes that each run the
script again from the top, so every worker would redo the benchmark's set-up (the dataset
read, a matcher of 16.7k to 1M patterns built or loaded, logs of tens of megabytes
generated, Django set up where a benchmark needs it) to take a few values, at many times
the cost of what it measures; the Runner also owns the command line, which the scripts
and ``run_all.py``'s shared flags need. What a worker process buys, a fresh heap and no
state carried between values, the benchmarks get where it matters by their own means
(the matcher's lazily built analyses cleared before a first-sight pass, ``gc.collect``
before every value here).

Four shapes, one module:

* :func:`time_call`: one callable, calibrated loops, warm-ups, ``values`` values;
* :func:`time_alternating`: several callables measured value by value in turn, so a
  neighbour's burst on a shared machine hits every side rather than one;
* :func:`time_each`: one call per input, one value each (no loops, no warm-up): a
  distribution over inputs, such as line latency on first sight, which repeating a call
  would turn into the warm figure;
* :func:`time_once`: a call whose first run is the figure (a build, a cold start);

and :func:`split`, which regroups a :func:`time_each` over interleaved A/B inputs by side.

On it: ``bench_normalise.py``, ``bench_matcher.py``, ``bench_order.py``,
``bench_similar.py``, ``bench_explain.py``, ``bench_gaps.py``, ``highlight_costs.py``,
``bench_explain_pages.py``, and the benchmarks that drive Django's test client in this
process: ``bench_pages.py`` (each request a value of :func:`time_each`; the page cases of
``bench_scale.py`` run through its ``run_case``), ``page_layers.py`` (layered and plain
requests interleaved in one :func:`time_each`, then :func:`split`) and ``bench_loop.py``
(usage on and off interleaved the same way; ``count_match`` by :func:`time_call`). None of
them keeps a timing loop of its own.

Not on it, with runners of their own, because what they time is not a Python callable in
this process: ``benchmarks/load/`` (``wrk`` against gunicorn: requests a second and
latencies are the client's, the server's CPU read from ``/proc``); ``bench_store.py`` (a
gunicorn start until its first answered match, and the memory of its workers);
``bench_scale.py`` (imports and matcher builds in child processes, a fresh host's start);
``bench_import.py`` and ``bench_copy.py`` (each import a fresh child process into a fresh
database, which reports its own wall and CPU seconds and peak memory). There a fresh
process per run is the point, and one run is minutes of work: a value per run, not
pyperf's calibrated loops.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyperf
from pyperf._utils import tdist95conf_level

MIN_TIME = 0.1  # seconds one value should last at least: pyperf.Runner's default
MAX_LOOPS = 2**24
# pyperf refuses a value of zero; a call faster than the clock can tell gets one tick.
_TICK = 1e-9


@dataclass(frozen=True)
class Timing:
    """One timing on both clocks, and what the last timed call returned."""

    wall: pyperf.Benchmark
    cpu: pyperf.Benchmark
    result: Any = None

    @property
    def benchmarks(self) -> list[pyperf.Benchmark]:
        return [self.wall, self.cpu]


def _metadata(name: str, loops: int, timer: str) -> dict[str, Any]:
    return {
        "name": name,
        "loops": loops,
        "unit": "second",
        "timer": timer,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count() or 1,
        "load_avg_1min": os.getloadavg()[0],
    }


def _timing(
    name: str,
    wall: Sequence[float],
    cpu: Sequence[float],
    loops: int = 1,
    warmups: Sequence[tuple[int, float, float]] = (),
    result: Any = None,
) -> Timing:
    """A Timing from per-loop values, and the warm-ups as (loops, raw wall, raw CPU)."""

    def bench(suffix: str, values: Sequence[float], which: int, timer: str) -> pyperf.Benchmark:
        run = pyperf.Run(
            [max(v, _TICK) for v in values],
            warmups=[(w[0], w[which] / w[0]) for w in warmups] or None,
            metadata=_metadata(name + suffix, loops, timer),
            collect_metadata=False,
        )
        return pyperf.Benchmark([run])

    return Timing(
        bench("", wall, 1, "time.perf_counter()"),
        bench(" (cpu)", cpu, 2, "time.process_time()"),
        result,
    )


def _raw(func: Callable[[], Any], loops: int) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``loops`` calls, and the last call's result."""
    gc.collect()  # the garbage of the value before is not this value's cost
    result = None
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(loops):
        result = func()
    return time.perf_counter() - t0, time.process_time() - c0, result


def _calibrate(
    func: Callable[[], Any], min_time: float
) -> tuple[int, list[tuple[int, float, float]]]:
    """Loops for one value to last ``min_time`` (wall), doubling from one as pyperf does;
    the calibration runs are warm-ups too."""
    loops, warm = 1, []
    while True:
        wall, cpu, _ = _raw(func, loops)
        warm.append((loops, wall, cpu))
        if wall >= min_time or loops >= MAX_LOOPS:
            return loops, warm
        loops *= 2


def time_call(
    name: str,
    func: Callable[[], Any],
    *,
    values: int = 5,
    warmups: int = 1,
    loops: int | None = None,
    min_time: float = MIN_TIME,
) -> Timing:
    """``values`` values of ``func()``, each the mean of ``loops`` calls (calibrated when
    not given), after at least ``warmups`` warm-up values (calibrating counts: a call that
    lasts ``min_time`` alone is not run again to warm up)."""
    return time_alternating(
        {name: func}, values=values, warmups=warmups, loops=loops, min_time=min_time
    )[name]


def time_alternating(
    funcs: Mapping[str, Callable[[], Any]],
    *,
    values: int = 5,
    warmups: int = 1,
    loops: int | None = None,
    min_time: float = MIN_TIME,
) -> dict[str, Timing]:
    """Each callable timed as :func:`time_call` does, their values taken in turn (the
    first's, the second's, ..., then the first's again): a ratio between them is then
    measured under the same conditions on both sides."""
    plan: dict[str, tuple[int, list[tuple[int, float, float]]]] = {}
    for name, func in funcs.items():
        n, warm = (loops, []) if loops else _calibrate(func, min_time)
        for _ in range(warmups - len(warm)):  # the calibration's runs warmed it up too
            wall, cpu, _ = _raw(func, n)
            warm.append((n, wall, cpu))
        plan[name] = (n, warm)
    wall_values: dict[str, list[float]] = {name: [] for name in funcs}
    cpu_values: dict[str, list[float]] = {name: [] for name in funcs}
    results: dict[str, Any] = {}
    for _ in range(values):
        for name, func in funcs.items():
            n = plan[name][0]
            wall, cpu, results[name] = _raw(func, n)
            wall_values[name].append(wall / n)
            cpu_values[name].append(cpu / n)
    return {
        name: _timing(name, wall_values[name], cpu_values[name], n, warm, results.get(name))
        for name, (n, warm) in plan.items()
    }


def time_each(
    name: str,
    func: Callable[[Any], Any],
    inputs: Iterable[Any],
    before: Callable[[], Any] | None = None,
) -> Timing:
    """One call of ``func(item)`` per input, one value each, in input order, ``before()``
    run untimed ahead of each (a cache emptied, say); ``result`` is the list of what the
    calls returned."""
    wall_values, cpu_values, results = [], [], []
    for item in inputs:
        if before is not None:
            before()
        c0, t0 = time.process_time(), time.perf_counter()
        results.append(func(item))
        wall_values.append(time.perf_counter() - t0)
        cpu_values.append(time.process_time() - c0)
    return _timing(name, wall_values, cpu_values, result=results)


def split(each: Timing, sides: Sequence[str]) -> dict[str, Timing]:
    """A :func:`time_each` over interleaved inputs regrouped by side (``sides[i]`` is the
    side of input ``i``), in order of first appearance: the two arms of an A/B run whose
    requests alternated one by one, so a burst on a shared machine hits both."""
    name = each.wall.get_name()
    wall, cpu, results = each.wall.get_values(), each.cpu.get_values(), each.result or []
    if not len(sides) == len(wall) == len(cpu):
        raise ValueError(f"{name}: {len(sides)} sides for {len(wall)} values")
    return {
        side: _timing(
            f"{name}, {side}",
            [v for s, v in zip(sides, wall, strict=True) if s == side],
            [v for s, v in zip(sides, cpu, strict=True) if s == side],
            result=[r for s, r in zip(sides, results, strict=False) if s == side],
        )
        for side in dict.fromkeys(sides)
    }


def time_once(name: str, func: Callable[[], Any]) -> Timing:
    """The first call alone: one value, for a cost that a second call would not pay."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    result = func()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return _timing(name, [wall], [cpu], result=result)


def from_values(name: str, values: Sequence[float], timer: str = "derived") -> pyperf.Benchmark:
    """A Benchmark of values derived from timings (say each input's fastest of several
    passes), for pyperf's statistics on them."""
    run = pyperf.Run(
        [max(v, _TICK) for v in values],
        metadata=_metadata(name, 1, timer),
        collect_metadata=False,
    )
    return pyperf.Benchmark([run])


def summary(bench: pyperf.Benchmark, scale: float = 1.0, ndigits: int = 3) -> dict[str, Any]:
    """pyperf's statistics of ``bench`` times ``scale`` (1e3 for milliseconds), rounded."""
    values = bench.get_values()

    def r(value: float) -> float:
        return round(value * scale, ndigits)

    return {
        "median": r(bench.median()),
        "mean": r(bench.mean()),
        "stdev": r(bench.stdev()) if len(values) > 1 else 0.0,
        "p50": r(bench.percentile(50)),
        "p95": r(bench.percentile(95)),
        "p99": r(bench.percentile(99)),
        "min": r(min(values)),
        "max": r(max(values)),
        "values": len(values),
        "loops": bench.get_loops(),
    }


def compare(ref: pyperf.Benchmark, changed: pyperf.Benchmark) -> dict[str, Any]:
    """``changed`` against ``ref`` as ``pyperf compare_to`` reports it: the ratio of the
    means (above 1: slower) and of the medians, and whether the difference is significant
    (Student's two-sample t-test, two-tailed, 95%); None where one value a side cannot
    tell."""
    a, b = ref.get_values(), changed.get_values()
    out: dict[str, Any] = {
        "ratio_of_means": round(changed.mean() / ref.mean(), 3),
        "ratio_of_medians": round(changed.median() / ref.median(), 3),
        "significant": None,
        "t_score": None,
    }
    if len(a) < 2 or len(b) < 2:
        return out
    t = _t_score(a, b)
    out["t_score"] = round(t, 2) if math.isfinite(t) else None
    # pyperf's own critical values, so a verdict here is the one compare_to gives. Its
    # t-score needs two samples of one size; this one pools samples of any sizes.
    out["significant"] = abs(t) >= tdist95conf_level(len(a) + len(b) - 2)
    return out


def _t_score(a: Sequence[float], b: Sequence[float]) -> float:
    pooled = ((len(a) - 1) * statistics.variance(a) + (len(b) - 1) * statistics.variance(b)) / (
        len(a) + len(b) - 2
    )
    diff = statistics.mean(a) - statistics.mean(b)
    error = math.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    if error == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / error


def dump(name: str, benchmarks: Iterable[pyperf.Benchmark], results: Path) -> Path:
    """``benchmarks`` as one suite in ``results/<name>.pyperf.json`` (replaced); a suite
    holds one benchmark of a name, so a repeated name is an error before anything is
    written."""
    benchmarks = list(benchmarks)
    names = [b.get_name() for b in benchmarks]
    if repeated := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"timings named twice: {repeated}")
    suite = pyperf.BenchmarkSuite(benchmarks)
    path = results / f"{name}.pyperf.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    suite.dump(str(path), replace=True)
    return path
