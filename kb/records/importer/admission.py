"""Pattern admission for a whole batch of records at once.

The matcher decides which patterns it can run (``kb.engine.admit_pattern``: its own
structural analysis, then a Hyperscan compile, then RE2). A Hyperscan compile of a
caseless Unicode template is expensive, and compiling a batch together is no cheaper per
pattern, so asking the engine once per record would make the engine compile the import's
bottleneck.

So a batch is admitted in two steps:
- every distinct pattern is analysed by the matcher's own ``analyse`` (the rules that
  refuse backreferences, lookaround, counted repeats above the limit, empty-matching and
  placeholder-only patterns, anything that is not a Python regex);
- a *template* pattern (literal text and ``(.+?)`` placeholders, which is what the dataset
  is made of) is then admitted without an engine compile: its scan form is escaped
  literals joined by ``.*``, which Hyperscan always accepts below a size limit; a longer
  one, and every *opaque* regex, goes through the full ``kb.records.validation.admit_pattern``
  (engine compile; cached per pattern).

The matcher stays the final arbiter: its shard build records any pattern an engine
refuses.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kb.engine.patterns import analyse
from kb.records.validation import PatternVerdict, admit_pattern

# Template scan forms longer than this get the engine compile: Hyperscan's own limits are
# far above it, and no pattern of the dataset comes near it.
MAX_TRUSTED_SCAN_FORM = 8000


def _admit_one(pattern: str) -> PatternVerdict:
    analysis = analyse(pattern)
    if not analysis.ok:
        return PatternVerdict(False, "", analysis.reason or "refused", analysis.generic)
    # A scan form escapes each ASCII character as at most four (``\\x2c``).
    if analysis.template and 4 * len(pattern) <= MAX_TRUSTED_SCAN_FORM:
        return PatternVerdict(True, "hyperscan", "", analysis.generic)
    return admit_pattern(pattern)


def admit_batch(patterns: Iterable[str]) -> dict[str, PatternVerdict]:
    """Verdict for each distinct pattern (see the module docstring)."""
    return {p: _admit_one(p) for p in dict.fromkeys(patterns)}


def set_verdict(row: dict[str, Any], verdict: PatternVerdict) -> None:
    """Write ``verdict`` into a record row: refused patterns are stored disabled."""
    row["disabled_reason"] = "" if verdict.ok else verdict.reason or "pattern refused"
    row["pattern_engine"] = verdict.engine if verdict.ok else ""
