"""ReDoS immunity (docs/reliability.md#r11-redos): catastrophic patterns as records and as
pasted input cost work in proportion to the paste; Python `re` never runs on user text
unbounded.

No absolute time is asserted. Each hostile input is matched at two sizes, N and
``FACTOR`` times N, and the work may grow at most as ``FACTOR ** EXPONENT``: linear work
grows as ``FACTOR ** 1``, quadratic as ``FACTOR ** 2``, and a backtracking blow-up by orders
of magnitude more. The work is measured twice, and both must stay under the bar:

- **operations**: the Python bytecode instructions the match executes, counted by a
  ``sys.monitoring`` hook. The same input runs the same instructions on any machine under
  any load, so this count is exact, and it sees every loop of the matcher's own code.
- **CPU time** of the C engines' share (Hyperscan, RE2, the bounded confirmation), which
  no Python hook can count: the fastest of ``ROUNDS`` calls at each size, the two sizes
  taken in turn so that a change of load falls on both. Noise only ever adds time, and the
  margin between linear (4x) and the bar (8x) is a factor of two, which cache or
  scheduler noise does not reach; a backtracking engine misses the bar by far more.

``benchmarks/bench_matcher.py`` measures the absolute times of the same inputs
(``tests/engine/redos_inputs.py``).
"""

from __future__ import annotations

import gc
import math
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec
from tests.engine.redos_inputs import EVIL_INPUTS, EVIL_PATTERNS, SIZE, paste

FACTOR = 4  # the larger input is this many times the smaller
EXPONENT = 1.5  # work(FACTOR * N) <= FACTOR ** EXPONENT * work(N): linear 1, quadratic 2
ROUNDS = 7  # timed calls per size, the fastest kept

Match = Callable[[str], object]


def operations(match: Match, text: str) -> int:
    """Python bytecode instructions executed by ``match(text)`` (a ``sys.monitoring`` tool
    counting INSTRUCTION events; the count does not depend on the machine or its load)."""
    mon = sys.monitoring
    tool = next(i for i in range(6) if mon.get_tool(i) is None)  # 6: the last free id
    count = 0

    def on_instruction(_code: object, _offset: int) -> None:
        nonlocal count
        count += 1

    mon.use_tool_id(tool, "redos-operations")
    try:
        mon.register_callback(tool, mon.events.INSTRUCTION, on_instruction)
        mon.set_events(tool, mon.events.INSTRUCTION)
        try:
            match(text)
        finally:
            mon.set_events(tool, mon.events.NO_EVENTS)
            mon.register_callback(tool, mon.events.INSTRUCTION, None)
    finally:
        mon.free_tool_id(tool)
    return count


def cpu_seconds(match: Match, small: str, large: str) -> tuple[float, float]:
    """CPU time of the fastest of ``ROUNDS`` calls at each size, the sizes in turn, with the
    heap frozen as the app runs after each build (``kb.matching.holder``: no full collection
    walks it mid-call)."""
    best = [math.inf, math.inf]
    gc.collect()
    gc.freeze()
    try:
        for _ in range(ROUNDS):
            for i, text in enumerate((small, large)):
                t0 = time.process_time()
                match(text)
                best[i] = min(best[i], time.process_time() - t0)
    finally:
        gc.unfreeze()
    return best[0], best[1]


def exponent(small: float, large: float) -> float:
    """How work grew from N to FACTOR * N, as a power of FACTOR (1 for linear)."""
    return math.log(max(large, 1e-9) / max(small, 1e-9), FACTOR)


def growth(match: Match, make: Callable[[int], str], size: int = SIZE) -> dict[str, float]:
    """The growth exponent of each measure of work, from ``size`` to FACTOR times it."""
    small, large = make(size), make(FACTOR * size)
    match(small)  # warm: lazily analysed patterns, scratch space
    match(large)
    ops = exponent(operations(match, small), operations(match, large))
    return {"operations": ops, "cpu": exponent(*cpu_seconds(match, small, large))}


def within_bar(measured: dict[str, float]) -> bool:
    return all(value <= EXPONENT for value in measured.values())


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    specs = [PatternSpec(f"evil{i}", p, p) for i, p in enumerate(EVIL_PATTERNS)]
    specs.append(PatternSpec("ok", r"ordinary failure in (.+?) while loading", ""))
    return Matcher.build(specs, cache_dir=tmp_path_factory.mktemp("evil"))


@pytest.mark.parametrize("kind", EVIL_INPUTS)
def test_catastrophic_patterns_on_hostile_input_scale_linearly(evil: Matcher, kind: str) -> None:
    measured = growth(evil.match, EVIL_INPUTS[kind])
    assert within_bar(measured), measured


def _backtrack(text: str, i: int = 0) -> bool:
    """``(a+)+$`` by backtracking, written in Python: every way to split the run of ``a``
    into groups is tried before the ``!`` fails them all."""
    if i == len(text):
        return True
    return any(
        _backtrack(text, j) for j in range(i + 1, len(text) + 1) if text[i:j] == "a" * (j - i)
    )


def test_each_measure_catches_a_backtracking_blow_up() -> None:
    """The measures themselves: a backtracking matcher fails the bar at a size of a few
    characters, counted in operations when it is Python code, in CPU time when it is C
    (Python's `re`, which the matcher never runs on a paste)."""
    assert growth(_backtrack, lambda n: "a" * n + "!", size=3)["operations"] > EXPONENT
    assert growth(re.compile(r"(a+)+$").match, lambda n: "a" * n + "!", size=5)["cpu"] > EXPONENT


def test_the_operation_count_does_not_depend_on_the_run(evil: Matcher) -> None:
    """Counted, not timed: the same input costs the same operations every time.

    The one exception is a wall-clock bound firing (a confirm's timeout, the paste's
    confirm budget) when the machine stalls the process mid-call: that run did other work
    and its report says so, so it is left out of the comparison rather than hidden."""
    text = EVIL_INPUTS["lines"](SIZE)
    evil.match(text)
    counts: list[int] = []
    reports: list = []
    for _ in range(8):
        count = operations(lambda t: reports.append(evil.match(t)), text)
        if not reports[-1].notes:
            counts.append(count)
        if len(counts) == 3:
            break
    assert len(counts) >= 2, "every run was cut short by a wall-clock bound"
    assert len(set(counts)) == 1, counts


def test_catastrophic_patterns_are_admitted_or_refused_explicitly(evil: Matcher) -> None:
    for i in range(len(EVIL_PATTERNS)):
        adm = evil.admission(f"evil{i}")
        assert adm.ok or adm.reason


@pytest.mark.slow
@pytest.mark.parametrize("kind", EVIL_INPUTS)
def test_hostile_input_against_full_dataset_scales_linearly(
    full_matcher: Matcher, kind: str
) -> None:
    measured = growth(full_matcher.match, EVIL_INPUTS[kind])
    assert within_bar(measured), measured


@pytest.mark.slow
@pytest.mark.parametrize("pattern", EVIL_PATTERNS)
def test_catastrophic_patterns_as_pasted_text_against_full_dataset(
    full_matcher: Matcher, pattern: str
) -> None:
    measured = growth(full_matcher.match, lambda n: (pattern + "\n") * (n // (len(pattern) + 1)))
    assert within_bar(measured), measured


@pytest.mark.slow
def test_256k_paste_against_full_dataset_scales_linearly(full_matcher: Matcher) -> None:
    measured = growth(full_matcher.match, paste, size=256 * 1024 // FACTOR)
    assert within_bar(measured), measured


def test_no_unbounded_python_re_on_user_text() -> None:
    """Static guard: the matcher runs user text only through Hyperscan, RE2 or the
    `regex` package with a timeout."""
    src = Path(__file__).resolve().parents[2] / "kb" / "engine"
    for name in ("matcher.py", "candidates.py", "rank.py", "shards.py", "textmap.py"):
        code = (src / name).read_text(encoding="utf-8")
        for line in code.splitlines():
            if ".search(window" in line or ".finditer(window" in line:
                assert "timeout=" in line, f"{name}: {line.strip()}"
