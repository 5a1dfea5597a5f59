"""ReDoS immunity (docs/reliability.md#r11-redos): catastrophic patterns as records and as
pasted input cost work in proportion to the paste; Python `re` never runs on user text
unbounded.

No absolute time is asserted (a shared machine makes one call's time mean little): each
hostile input is matched at two sizes in the same run, and twice the input may cost at
most ``RATIO`` times the work (docs/reliability.md#r12-linear-scaling). A backtracking
blow-up is polynomial or exponential in the input and fails that by orders of magnitude.
``benchmarks/bench_matcher.py`` measures the absolute times of the same inputs
(``tests/engine/redos_inputs.py``).
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec
from tests.engine.redos_inputs import EVIL_INPUTS, EVIL_PATTERNS, SIZE, paste

RATIO = 2.5  # time(2N) / time(N): linear work with room for constant costs and noise


def _work(match: Callable[[str], object], text: str, tries: int = 5) -> float:
    """CPU time of the fastest of ``tries`` calls (noise on a shared machine only ever
    adds, so the fastest call measures the work), with the heap frozen as the app runs
    after each build (``kb.matching.holder``: no full collection walks it mid-call)."""
    gc.collect()
    gc.freeze()
    best = float("inf")
    try:
        for _ in range(tries):
            t0 = time.process_time()
            match(text)
            best = min(best, time.process_time() - t0)
    finally:
        gc.unfreeze()
    return best


def growth(match: Callable[[str], object], make: Callable[[int], str], size: int = SIZE) -> float:
    """How much more work twice the input costs: the lowest of three measured ratios."""
    small, large = make(size), make(2 * size)
    match(small)  # warm: lazily analysed patterns, scratch space
    match(large)
    return min(_work(match, large) / max(_work(match, small), 1e-6) for _ in range(3))


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    specs = [PatternSpec(f"evil{i}", p, p) for i, p in enumerate(EVIL_PATTERNS)]
    specs.append(PatternSpec("ok", r"ordinary failure in (.+?) while loading", ""))
    return Matcher.build(specs, cache_dir=tmp_path_factory.mktemp("evil"))


@pytest.mark.parametrize("kind", EVIL_INPUTS)
def test_catastrophic_patterns_on_hostile_input_scale_linearly(evil: Matcher, kind: str) -> None:
    assert growth(evil.match, EVIL_INPUTS[kind]) <= RATIO


def test_the_ratio_catches_a_backtracking_blow_up() -> None:
    """The measure itself: Python's `re` on the nested quantifier (what the matcher never
    runs on a paste) fails the bar at a size of a few characters."""
    backtracking = re.compile(r"(a+)+$").match
    assert growth(backtracking, lambda n: "a" * n + "!", size=8) > RATIO


def test_catastrophic_patterns_are_admitted_or_refused_explicitly(evil: Matcher) -> None:
    for i in range(len(EVIL_PATTERNS)):
        adm = evil.admission(f"evil{i}")
        assert adm.ok or adm.reason


@pytest.mark.slow
@pytest.mark.parametrize("kind", EVIL_INPUTS)
def test_hostile_input_against_full_dataset_scales_linearly(
    full_matcher: Matcher, kind: str
) -> None:
    assert growth(full_matcher.match, EVIL_INPUTS[kind]) <= RATIO


@pytest.mark.slow
@pytest.mark.parametrize("pattern", EVIL_PATTERNS)
def test_catastrophic_patterns_as_pasted_text_against_full_dataset(
    full_matcher: Matcher, pattern: str
) -> None:
    assert (
        growth(full_matcher.match, lambda n: (pattern + "\n") * (n // (len(pattern) + 1))) <= RATIO
    )


@pytest.mark.slow
def test_256k_paste_against_full_dataset_scales_linearly(full_matcher: Matcher) -> None:
    assert growth(full_matcher.match, paste, size=128 * 1024) <= RATIO


def test_no_unbounded_python_re_on_user_text() -> None:
    """Static guard: the matcher runs user text only through Hyperscan, RE2 or the
    `regex` package with a timeout."""
    src = Path(__file__).resolve().parents[2] / "kb" / "engine"
    for name in ("matcher.py", "candidates.py", "rank.py", "shards.py", "textmap.py"):
        code = (src / name).read_text(encoding="utf-8")
        for line in code.splitlines():
            if ".search(window" in line or ".finditer(window" in line:
                assert "timeout=" in line, f"{name}: {line.strip()}"
