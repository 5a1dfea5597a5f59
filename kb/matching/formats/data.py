"""What the renderers need beyond the contract's JSON shape, read from the loaded records.

``MatchResult.as_json()`` names records by id; a reader of a CI log or a ticket needs each
record's message, a link to its page and the first thing to try, and the whole pasted line
of a match rather than the matched span. They go under one extra key, ``records``, which
the JSON format leaves out again: the API and ``--json`` keep printing the contract's
object. The records are the ones ``match_text`` already loaded (no query here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kb.matching.holder import MatchResult
from kb.matching.views import line_pieces
from kb.records.links import record_url
from kb.records.models import ErrorRecord


def _pasted_line(text: str, span: tuple[int, int], fallback: str) -> str:
    """The matched line as the result card shows it (cut around the span)."""
    before, hit, after, cut_before, cut_after = line_pieces(text, span, fallback)
    return f"{'…' if cut_before else ''}{before}{hit}{after}{'…' if cut_after else ''}"


def _first_step(record: ErrorRecord) -> str:
    solutions = record.solutions or []
    return str(solutions[0]) if solutions else ""


def report_data(
    result: MatchResult, text: str, absolute: Callable[[str], str] = str
) -> dict[str, Any]:
    """``result.as_json()`` plus ``records``: per record id, its ``title``, ``url`` (made
    absolute by ``absolute``), ``first_step`` and, for matched ones, ``line_text``."""
    data = result.as_json()
    records: dict[str, dict[str, str]] = {}

    def info(record: ErrorRecord) -> dict[str, str]:
        if record.pk not in records:
            records[record.pk] = {
                "title": record.error_message,
                "url": absolute(record_url(record.pk)),
                "first_step": _first_step(record),
            }
        return records[record.pk]

    for m in result.matches:
        entry = info(m.record)
        if "line_text" not in entry:  # the first match of a record is the one shown
            entry["line_text"] = _pasted_line(text, m.span, m.text)
    for s in result.suggestions:
        info(s.record)
    data["records"] = records
    return data
