"""What the renderers need beyond the contract's JSON shape, read from the loaded records.

``MatchResult.as_json()`` names records by id; a reader of a CI log or a ticket needs each
record's message, a link to its page and the first thing to try, and the whole pasted line
of a match rather than the matched span. They go under one extra key, ``records``, which
the JSON format leaves out again: the API and ``--json`` keep printing the contract's
object. The records are the ones ``match_text`` already loaded (no query here).

``line_pieces`` cuts a match's pasted line around its span; the paste page's cards show
the same pieces, so a ticket quotes the line exactly as the page showed it.

With no confident match, ``coverage`` (the repositories the knowledge base covers, with
their record counts) and ``report_url`` (where to report an unknown error, when reports
are on) let every format say what "no known error" means, as the paste page does. Like
``records``, they are display extras the JSON format leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.urls import reverse

from kb.browse.selectors import covered_repositories
from kb.engine.textmap import Text
from kb.matching.holder import MatchResult
from kb.records.links import RecordUrls
from kb.records.models import ErrorRecord

# Context shown around the matched span on its line, in characters each side.
LINE_CONTEXT = 160


def line_pieces(
    text: Text, span: tuple[int, int], fallback: str
) -> tuple[str, str, str, bool, bool]:
    """Split the matched line into (before, hit, after), each a plain string."""
    start, end = span if span else (-1, -1)
    if not (0 <= start <= end <= len(text)):
        return "", fallback, "", False, False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if line_end == -1:
        line_end = len(text)
    before = text[line_start:start]
    after = text[end:line_end].rstrip("\r")
    cut_before = len(before) > LINE_CONTEXT
    cut_after = len(after) > LINE_CONTEXT
    if cut_before:
        before = before[-LINE_CONTEXT:]
    if cut_after:
        after = after[:LINE_CONTEXT]
    return before, text[start:end], after, cut_before, cut_after


def _pasted_line(text: Text, span: tuple[int, int], fallback: str) -> str:
    """The matched line as the result card shows it (cut around the span)."""
    before, hit, after, cut_before, cut_after = line_pieces(text, span, fallback)
    return f"{'…' if cut_before else ''}{before}{hit}{after}{'…' if cut_after else ''}"


def _first_step(record: ErrorRecord) -> str:
    solutions = record.solutions or []
    return str(solutions[0]) if solutions else ""


def report_data(
    result: MatchResult,
    text: Text,
    absolute: Callable[[str], str] = str,
    to_text: Callable[[int], int] | None = None,
    urls: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``result.as_json()`` plus ``records``: per record id, its ``title``, ``url`` (made
    absolute by ``absolute``), ``first_step`` and, for matched ones, ``line_text``.
    ``to_text`` maps the spans' offsets into ``text`` when it is an excerpt of the log
    (``kb.matching.holder.LogMatch``); ``urls`` (record id -> path,
    `kb.records.links.RecordUrls`) lets a page that links the same records share their
    reversed paths."""
    data = result.as_json()
    records: dict[str, dict[str, str]] = {}
    urls = RecordUrls() if urls is None else urls

    def info(record: ErrorRecord) -> dict[str, str]:
        if record.pk not in records:
            records[record.pk] = {
                "title": record.error_message,
                "url": absolute(urls[record.pk]),
                "first_step": _first_step(record),
            }
        return records[record.pk]

    for m in result.matches:
        entry = info(m.record)
        if "line_text" not in entry:  # the first match of a record is the one shown
            span = m.span if to_text is None else (to_text(m.span[0]), to_text(m.span[1]))
            entry["line_text"] = _pasted_line(text, span, m.text)
    for s in result.suggestions:
        info(s.record)
    data["records"] = records
    if not result.matches:
        data["coverage"] = [{"repo": c.repo, "records": c.records} for c in covered_repositories()]
        if settings.KB_REPORTS_ENABLED:
            data["report_url"] = absolute(reverse("paste"))
    return data


# Keys ``report_data`` adds for the renderers, beyond the contract's JSON shape.
DISPLAY_KEYS = frozenset({"records", "coverage", "report_url"})
