"""The pattern test bench: try an edited pattern on sample log text without saving.

The curator pastes log text on the record's change form; the bench shows what the
*edited* pattern matches (each hit highlighted, with its captures) and which records the
live matcher finds in the same text. The edited pattern runs through the ``regex``
package with a timeout on every line and a budget for the whole text, so a
pathological pattern cannot stall a worker; the live matcher is ``kb.matching.holder``, and
``Matcher.with_changes`` folds the edit into it (compiling just that pattern) to show
where the edited record would rank among the matcher's answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from kb.browse.releases import record_releases
from kb.engine import PatternSpec
from kb.engine.types import Wording
from kb.http import TooLarge, check, text_bytes
from kb.matching.holder import get_matcher, match_text, older_wordings
from kb.records.models import ErrorRecord
from kb.records.validation import PatternVerdict, admit_pattern, compile_pattern, message_is_matched

LINE_TIMEOUT_S = 0.02
BUDGET_S = 0.5
MAX_HITS = 50
CONTEXT_CHARS = 120
MAX_RANKED = 10
NEW_KEY = "__bench_new_record__"  # the matcher's key for a record not saved yet
# Older wordings tried on the sample, newest first: each runs under find_hits' own budget.
MAX_WORDINGS = 5


@dataclass(slots=True)
class Hit:
    line: int
    before: str
    text: str
    after: str
    captures: list[str]


@dataclass(slots=True)
class Ranked:
    """One confident match of the live matcher with the edit folded in."""

    record: Any  # kb.records.models.ErrorRecord, or None for a record not saved yet
    edited: bool
    line: int
    text: str
    score: float
    kind: str


@dataclass(slots=True)
class WordingHits:
    """Which sample lines an older wording of the record (an alias) matches."""

    span: str  # the releases that word it so
    message: str
    retired: bool
    lines: list[int]


@dataclass(slots=True)
class BenchResult:
    pattern: str
    verdict: PatternVerdict | None = None
    own_message_ok: bool | None = None
    hits: list[Hit] = field(default_factory=list)
    others: list[Any] = field(default_factory=list)  # kb.matching.holder.MatchView
    suggestions: list[Any] = field(default_factory=list)  # kb.matching.holder.SuggestionView
    ranked: list[Ranked] = field(default_factory=list)  # with the edit folded in
    edited_rank: int | None = None  # 1-based place of the edited record among matches
    edited_suggestion: str = ""  # why the edited record is only suggested, if it is
    wordings: list[WordingHits] = field(default_factory=list)  # the saved record's aliases
    notes: list[str] = field(default_factory=list)
    error: str = ""
    elapsed_ms: float = 0.0


def find_hits(pattern: str, text: str) -> tuple[list[Hit], list[str]]:
    """Every line (or window of lines, for a multi-line pattern) the pattern matches."""
    rx = compile_pattern(pattern)
    notes: list[str] = []
    if rx is None:
        return [], ["The pattern does not compile."]
    span = pattern.count("\n") + pattern.count("\\n")
    lines = text.replace("\r\n", "\n").split("\n")
    deadline = time.perf_counter() + BUDGET_S
    hits: list[Hit] = []
    for i in range(len(lines)):
        if time.perf_counter() > deadline:
            notes.append(f"Stopped after {i} lines: the time budget ran out.")
            break
        window = "\n".join(lines[i : i + span + 1])
        try:
            m = rx.search(window, timeout=LINE_TIMEOUT_S)
        except TimeoutError:
            notes.append(f"Line {i + 1}: the pattern timed out (too much backtracking).")
            continue
        if m is None:
            continue
        hits.append(
            Hit(
                line=i + 1,
                before=window[max(0, m.start() - CONTEXT_CHARS) : m.start()],
                text=m.group(0),
                after=window[m.end() : m.end() + CONTEXT_CHARS],
                captures=[g if g is not None else "" for g in m.groups()],
            )
        )
        if len(hits) >= MAX_HITS:
            notes.append(f"Only the first {MAX_HITS} hits are shown.")
            break
    return hits, notes


def run_bench(*, pattern: str, message: str, text: str, record_id: str | None) -> BenchResult:
    """What the edited ``pattern`` and the live matcher find in ``text``."""
    started = time.perf_counter()
    result = BenchResult(pattern=pattern)
    try:
        check("sample", text_bytes(text), settings.KB_MAX_PASTE_BYTES)
    except TooLarge as exc:
        result.error = exc.detail
        return result
    if not pattern.strip():
        result.error = "The pattern is empty."
        return result
    result.verdict = admit_pattern(pattern)
    if message.strip():
        result.own_message_ok = message_is_matched(pattern, message)
    if text.strip():
        result.hits, result.notes = find_hits(pattern, text)
        if record_id:
            result.wordings = _older_wordings(record_id, text)
        _live_matches(result, text, record_id)
        if result.verdict.ok:
            _with_edit(result, text, pattern, message, record_id)
    result.elapsed_ms = (time.perf_counter() - started) * 1000
    return result


def _older_wordings(record_id: str, text: str) -> list[WordingHits]:
    """The sample lines each older wording of the saved record matches: a line in an
    older release's words is answered by the record through that alias."""
    record = ErrorRecord.objects.filter(pk=record_id).first()
    releases = record_releases(record) if record is not None else None
    older = [w for w in (releases.wordings if releases else ()) if not w.current and w.pattern]
    out = []
    for wording in older[::-1][:MAX_WORDINGS]:
        hits, _notes = find_hits(wording.pattern, text)
        out.append(
            WordingHits(wording.span, wording.message, wording.retired, [h.line for h in hits])
        )
    return out


def _live_matches(result: BenchResult, text: str, record_id: str | None) -> None:
    try:
        live = match_text(text)  # run_bench has checked the sample's size
    except Exception as exc:  # the bench must answer even if the live matcher cannot
        result.notes.append(f"The live matcher is unavailable: {type(exc).__name__}: {exc}")
        return
    result.others = list(live.matches)
    result.suggestions = list(live.suggestions)[:10]
    if record_id and any(m.record.pk == record_id for m in result.others):
        result.notes.append("The live matcher also lists this record (its saved pattern).")


def _older_wordings_of(record_id: str, pattern: str) -> tuple[Wording, ...]:
    row = (
        ErrorRecord.objects.filter(pk=record_id, release_history__isnull=False)
        .values_list("release_history__wordings", "retired_wordings")
        .first()
    )
    return older_wordings(pattern, *row) if row else ()


def _with_edit(
    result: BenchResult, text: str, pattern: str, message: str, record_id: str | None
) -> None:
    """Fold the edited pattern into the live matcher (``Matcher.with_changes``: only the
    edit is compiled, the running matcher is untouched) and see where it ranks."""
    try:
        key = record_id or NEW_KEY
        # the record's older wordings stay matched beside the edited pattern, as they
        # would once it is saved
        aliases = _older_wordings_of(record_id, pattern) if record_id else ()
        spec = PatternSpec(key, pattern, message, aliases=aliases)
        matcher = get_matcher().with_changes([spec], [])
        report = matcher.match(text, max_bytes=settings.KB_MAX_PASTE_BYTES)
    except Exception as exc:  # the rest of the bench still answers
        result.notes.append(f"Could not rank the edit: {type(exc).__name__}: {exc}")
        return
    keys = [m.key for m in report.matches[:MAX_RANKED]]
    records = ErrorRecord.objects.in_bulk([k for k in keys if k != NEW_KEY])
    for place, m in enumerate(report.matches[:MAX_RANKED], start=1):
        if m.key == key and result.edited_rank is None:
            result.edited_rank = place
        result.ranked.append(
            Ranked(records.get(m.key), m.key == key, m.line, m.text, m.score, m.kind)
        )
    if result.edited_rank is None:
        for s in report.suggestions:
            if s.key == key:
                result.edited_suggestion = s.reason or "suggested only"
                break
