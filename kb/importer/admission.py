"""Pattern admission for a whole batch of records at once.

The matcher decides which patterns it can run (``kb.matcher.admit_pattern``: its own
structural analysis, then a Hyperscan compile, then RE2). A single Hyperscan compile of a
caseless Unicode template costs ~15 ms here, so asking it once per record would cap an
import at ~70 records/s, and compiling a batch together is no faster per pattern.

So a batch is admitted in two steps:
- every distinct pattern is analysed by the matcher's own ``analyse`` (the rules that
  refuse backreferences, lookaround, counted repeats above the limit, empty-matching and
  placeholder-only patterns, anything that is not a Python regex);
- a *template* pattern (literal text and ``(.+?)`` placeholders, which is what the dataset
  is made of) is then admitted without an engine compile: its scan form is escaped
  literals joined by ``.*``, which Hyperscan always accepts below a size limit; a longer
  one, and every *opaque* regex, goes through the full ``kb.validation.admit_pattern``
  (engine compile; cached per pattern).

The matcher stays the final arbiter: its shard build records any pattern an engine
refuses. When ``kb.matcher`` grows a batch admission (``admit_patterns``), it is used
instead of all of this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from kb.validation import PatternVerdict, admit_pattern

# Template scan forms longer than this get the engine compile (Hyperscan's limits are far
# above it; the dataset's longest is ~1,100 characters).
MAX_TRUSTED_SCAN_FORM = 8000


def _verdict(admission: Any) -> PatternVerdict:
    return PatternVerdict(
        ok=bool(admission.ok),
        engine=admission.engine or "",
        reason=admission.reason or "",
        generic=bool(getattr(admission, "generic", False)),
    )


@lru_cache(maxsize=1)
def _matcher_hooks() -> tuple[Callable[..., Any] | None, Callable[[str], Any] | None]:
    """(batch admission, structural analysis) from ``kb.matcher``, whichever exist."""
    try:
        import kb.matcher as matcher
    except ImportError:  # the matcher is not installed: plain per-pattern admission
        return None, None
    batch = getattr(matcher, "admit_patterns", None)
    try:
        from kb.matcher.patterns import analyse
    except ImportError:
        analyse = None
    return batch, analyse


def _admit_one(pattern: str, analyse: Callable[[str], Any] | None) -> PatternVerdict:
    if analyse is None:
        return admit_pattern(pattern)
    analysis = analyse(pattern)
    if not analysis.ok:
        return PatternVerdict(False, "", analysis.reason or "refused", analysis.generic)
    # A scan form escapes each ASCII character as at most four (``\\x2c``).
    if analysis.template and 4 * len(pattern) <= MAX_TRUSTED_SCAN_FORM:
        return PatternVerdict(True, "hyperscan", "", analysis.generic)
    return admit_pattern(pattern)


def admit_batch(patterns: Iterable[str]) -> dict[str, PatternVerdict]:
    """Verdict for each distinct pattern (see the module docstring)."""
    distinct = list(dict.fromkeys(patterns))
    if not distinct:
        return {}
    batch, analyse = _matcher_hooks()
    if batch is not None:
        return {p: _verdict(a) for p, a in zip(distinct, batch(distinct), strict=True)}
    return {p: _admit_one(p, analyse) for p in distinct}
