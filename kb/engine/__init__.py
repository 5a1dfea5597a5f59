"""Matcher core: which known error record does a pasted log contain?

Pure Python (no Django). See docs/matcher-interface.md for the contract; the pieces are
`patterns` (admission, specificity, scan forms), `shards` (Hyperscan databases, cached by
content hash), `cache` (the whole built matcher cached under the hash of its specs, and
bounded clean-up of the cache directory), `engine` (scan, confirm, orchestration),
`confirm` (regex-free confirms of template patterns), `rank` (confidence and order),
`evidence` (what the paste's frames, exception classes and quoted source say of which
software raised an error), `report` (overlapping readings folded into one answer each),
`suggest`, `lineclass`, `worddiff`, `rootcause`.

Extensions to the documented interface:

* `Matcher.build(specs, *, cache_dir=None, shard_size=None, with_similarity=True,
  workers=None, fetch=None)`: the specs oldest first (the shard layout follows their
  order, `shards.layout`); shards missing from `cache_dir` are asked of `fetch`, then
  compiled on `workers` threads (every core by default). With a `cache_dir`, an unchanged
  set of specs (same order) loads the whole built matcher from one file
  (`stats["matcher_from_cache"]`), and old unused cache files are cleaned up.
  `Matcher.shard_files()` names the shards' cache files (a host publishes them).
* `Matcher.admission(key) -> Admission` and `Matcher.refused() -> {key: reason}`: refused
  patterns are reported, never silently dropped.
* `len(matcher)`, `key in matcher`, `Matcher.keys()`: the record keys it holds, so its
  owner can tell by key which records it still matches (``kb.matching.holder`` finds deleted
  records that way).
* `Matcher.dumps() / Matcher.loads(bytes)`: the file format of `cache` (plain data and
  Hyperscan's own serialised databases, nothing that runs code; anything else is refused
  with `cache.Refused`), Hyperscan scratch re-created per thread after loading.
* `Match.kind`: "exact" | "relaxed" (case/whitespace) | "truncated" (paste stops inside
  the message) | "diverged" (text departs after a long prefix) | "fuzzy" (small edits).
* `Suggestion.line`, `Group.confident`, `MatchReport.notes`, `Matcher.stats`.
* `Suggestion.diff` (`worddiff`: the words reworded between the record's message and the
  pasted line) and `Group.order` / `reason` / `cause` (`rootcause`: a whole log's groups
  root cause first, each saying why it is where it is).

* `Matcher.match(text, facts=..., repos=...)` and `MatchReport.answers`: one `Answer`
  per error of the paste (the best reading of one piece of text, the others as
  alternatives), chosen with the paste's own evidence (`evidence.RecordFacts`).

Thread safety: one Matcher may be shared by threads; each thread gets its own Hyperscan
scratch per shard (threading.local). `with_changes` returns a new Matcher and never
mutates the old one, so swapping the reference is the only synchronisation needed.
"""

from __future__ import annotations

from .evidence import RecordFacts
from .matcher import Matcher
from .patterns import analyse
from .shards import HS_FLAGS_OPAQUE, HS_FLAGS_TEMPLATE, _hs_accepts, _re2_accepts
from .types import (
    Admission,
    Alternative,
    Answer,
    Group,
    Match,
    MatchReport,
    PasteTooLarge,
    PatternSpec,
    Suggestion,
)

__all__ = [
    "Admission",
    "Alternative",
    "Answer",
    "Group",
    "Match",
    "MatchReport",
    "Matcher",
    "PasteTooLarge",
    "PatternSpec",
    "RecordFacts",
    "Suggestion",
    "admit_pattern",
]


def admit_pattern(pattern: str) -> Admission:
    """Can this pattern be matched, by which engine, and how specific is it?"""
    a = analyse(pattern)
    if not a.ok:
        return Admission(False, None, a.reason, a.generic, float(a.literal_chars))
    if a.template:
        err = _hs_accepts(a.scan_form(), HS_FLAGS_TEMPLATE)
    else:
        err = _hs_accepts(pattern, HS_FLAGS_OPAQUE)
    if err is None:
        return Admission(True, "hyperscan", None, a.generic, float(a.literal_chars))
    err2 = _re2_accepts(pattern)
    if err2 is None:
        return Admission(True, "re2", None, a.generic, float(a.literal_chars))
    return Admission(
        False, None, f"Hyperscan: {err}; RE2: {err2}", a.generic, float(a.literal_chars)
    )
