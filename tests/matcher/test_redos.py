"""ReDoS immunity (RELIABILITY row 11, issue 3): catastrophic patterns as records and
as pasted input return quickly; Python `re` never runs on user text unbounded."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

from kb.matcher import Matcher, PatternSpec

LIMIT_S = 0.05  # the bar: every call < 50 ms of CPU time (see `_timed`)
EVIL_PATTERNS = [
    r"(a+)+b",
    r"^(\w+\s?)*$",
    r"(.*a){25}",
    r".*(?:.*=.*)",  # CF-2019
    r"(a+)+$",
    r"^[\s\u200c]+|[\s\u200c]+$",  # SO-2016
]
EVIL_INPUTS = [
    "a" * 30 + "!",
    "a" * 5000,
    " " * 20_000,
    " " * 20_000 + "x",  # SO-2016: 20k spaces then a non-space
    "x=" * 2500,
    "word " * 4000 + "!",
    "(a+)+b " * 200,
    "=" * 5000 + "a",
    ("a" * 300 + "b\n") * 20,
]


def _timed(m: Matcher, text: str, tries: int = 7) -> float:
    """The CPU time (`time.process_time`) one call needs: the fastest of up to `tries`
    calls after a warm-up call, stopping at the first call under the bar.

    CPU time, not wall-clock: on a loaded machine the wall-clock is mostly waiting for a
    CPU. The fastest call, not the median: on this VM a call's CPU time itself swells up
    to 3x at moments, in every phase alike (Hyperscan's C scan 4.5 -> 18.8 ms, Python
    normalisation 14 -> 34 ms of the 256 KiB paste) with no page fault, context switch or
    garbage collection in the call. Such noise only ever adds, so the fastest call is the
    measure of the work; two CI runs failed a median of 3 (51 and 64 ms) for a paste
    that takes 22-25 ms. The bar still catches what it is for: a backtracking blow-up
    takes seconds on every try.
    """
    m.match(text)  # warm: lazily analysed patterns, scratch space
    # As the app runs after each build (``kb.matching``: gc.collect + gc.freeze): no full
    # collection walks the heap mid-call (here the whole test session's heap).
    gc.collect()
    gc.freeze()
    best = float("inf")
    try:
        for _ in range(tries):
            t0 = time.process_time()
            m.match(text)
            best = min(best, time.process_time() - t0)
            if best < LIMIT_S:
                break
    finally:
        gc.unfreeze()
    return best


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    specs = [PatternSpec(f"evil{i}", p, p) for i, p in enumerate(EVIL_PATTERNS)]
    specs.append(PatternSpec("ok", r"ordinary failure in (.+?) while loading", ""))
    return Matcher.build(specs, cache_dir=tmp_path_factory.mktemp("evil"))


@pytest.mark.parametrize("text", EVIL_INPUTS, ids=lambda t: f"{t[:8]!r}x{len(t)}")
def test_catastrophic_patterns_on_hostile_input(evil: Matcher, text: str) -> None:
    assert _timed(evil, text) < LIMIT_S


def test_catastrophic_patterns_are_admitted_or_refused_explicitly(evil: Matcher) -> None:
    for i in range(len(EVIL_PATTERNS)):
        adm = evil.admission(f"evil{i}")
        assert adm.ok or adm.reason


@pytest.mark.slow
@pytest.mark.parametrize("text", EVIL_INPUTS + EVIL_PATTERNS, ids=lambda t: f"{t[:8]!r}")
def test_hostile_input_against_full_dataset(full_matcher: Matcher, text: str) -> None:
    assert _timed(full_matcher, text) < LIMIT_S


def paste_256k() -> str:
    """A realistic 256 KiB paste (RELIABILITY #11): log lines, a few real errors, long
    lines, unicode. ``benchmarks/bench_matcher.py`` times the same text."""
    block = (
        "2024-01-26T05:40:23.291957186Z  INFO risingwave_ctl::common: using meta addr 1:5690\n"
        "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: Failed to "
        "connect to meta server 127.0.0.1:5690, trying again error=transport error\n"
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but "
        "settings are not configured. You must either define the environment variable "
        "DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings.\n"
        + "connection refused by peer - données ünïcode " * 20
        + "\n"
    )
    return (block * (256 * 1024 // len(block) + 1))[: 256 * 1024]


@pytest.mark.slow
def test_256k_paste_against_full_dataset(full_matcher: Matcher) -> None:
    text = paste_256k()
    elapsed = _timed(full_matcher, text)
    # RELIABILITY row 11: < 50 ms of CPU per call (22-25 ms here on a quiet machine)
    assert elapsed < LIMIT_S, f"{elapsed * 1000:.0f} ms CPU for 256 KiB"


def test_no_unbounded_python_re_on_user_text() -> None:
    """Static guard: the matcher runs user text only through Hyperscan, RE2 or the
    `regex` package with a timeout."""
    src = Path(__file__).resolve().parents[2] / "kb" / "matcher"
    for name in ("engine.py", "candidates.py", "rank.py", "shards.py", "textmap.py"):
        code = (src / name).read_text(encoding="utf-8")
        for line in code.splitlines():
            if ".search(window" in line or ".finditer(window" in line:
                assert "timeout=" in line, f"{name}: {line.strip()}"
