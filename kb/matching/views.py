"""``/`` and ``/match/``: paste what you see, learn which known error it is.

One URL answers both the plain form post (a whole page, so the page works without
JavaScript) and htmx's debounced post (just the results, the ``results`` partial of
``kb/paste.html``); ``Vary: HX-Request`` keeps caches from mixing them up.

Pastes may hold secrets (tokens, passwords in connection strings), so they travel only in
POST bodies, are matched in memory, never stored or logged, and every response that could
echo them is ``Cache-Control: no-store``. An uploaded log file is read into memory by a
bounded upload handler instead of Django's temporary file on disk. What is too large is
``kb.http``' decision (the body in the middleware, the file here, the text in the
matcher); the refusal shows in the results area like any other answer.

Highlighting the matched span builds plain strings (before / match / after) that the
template escapes piece by piece: pasted text is never marked safe.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_safe
from django.views.decorators.vary import vary_on_headers

from kb.browse.explanations import explanation_for
from kb.browse.selectors import covered_repositories
from kb.engine import PasteTooLarge
from kb.engine.textmap import Text
from kb.engine.worddiff import WordDiff, word_diff
from kb.explain import Explanation
from kb.http import HtmxHttpRequest, Refusal, TooLarge, check, from_matcher, gunzip_blocks
from kb.matching import formats
from kb.matching.formats.data import line_pieces, report_data
from kb.matching.holder import (
    AlternativeView,
    AnswerView,
    LogMatch,
    MatchResult,
    MatchView,
    match_log,
    match_text,
)
from kb.matching.signals import matched
from kb.matching.values import FilledMessage, fill_message
from kb.records.links import RecordUrls
from kb.records.models import ErrorRecord

# The form field a whole log file comes in, here and in ``POST /api/match``.
LOG_FIELD = "log"
# The normalised text shown in the "no known error" state is cut here.
NORMALISED_PREVIEW = 4000
# Cards rendered in full, best first. A whole log can hold dozens of distinct known
# errors; past this many, the summary table (every one of them, counted and linked) is
# the answer, rather than a page of cards each with its snippet and explanation.
MAX_CARDS = 10
# Beside confident matches, the closest other possibilities listed (all are counted); with
# no confident match, every suggestion is listed: then they are the answer.
SUGGESTIONS_BESIDE_CARDS = 5


class BoundedUploadHandler(FileUploadHandler):
    """Keep an uploaded log up to ``limit`` bytes, in memory while small and in a temporary
    file past `SPOOL_BYTES` (a whole log is then read back in blocks, never held whole);
    past the limit, note and discard."""

    def __init__(self, request: HttpRequest, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.refused: TooLarge | None = None
        self.size = 0
        self._file: Any = None

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        # handed to the upload (file_complete), which Django closes with the request
        self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
        self.size = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.size += len(raw_data)
        try:
            check("file", self.size, self.limit)
        except TooLarge as exc:
            self.refused = exc
            self._file.close()
            raise StopUpload(connection_reset=False) from None
        self._file.write(raw_data)
        return None

    def file_complete(self, file_size: int) -> UploadedFile:
        self._file.seek(0)
        return UploadedFile(
            file=self._file,
            name=self.file_name,
            content_type=self.content_type,
            size=file_size,
            charset=self.charset,
            content_type_extra=self.content_type_extra,
        )


SPOOL_BYTES = 1024 * 1024  # an uploaded log larger than this waits in a temporary file


@dataclass(slots=True)
class Card:
    """One error of the paste as the results partial shows it: the best reading of its
    text (``answer.match``), the other records that read the same text under it."""

    answer: AnswerView
    before: str  # text on the matched line before the span (plain, escaped by the template)
    hit: str
    after: str
    cut_before: bool
    cut_after: bool
    first_solution: str
    others: list[ErrorRecord] = field(default_factory=list)
    # The title: the record's message with this paste's values in it (kb.matching.values).
    filled: FilledMessage | None = None

    @property
    def match(self) -> MatchView:
        return self.answer.match

    @property
    def record(self) -> ErrorRecord:
        return self.answer.match.record

    @property
    def alternatives(self) -> list[AlternativeView]:
        return self.answer.alternatives

    @property
    def explanation(self) -> Explanation | None:
        return explanation_for(self.answer.match.record)

    @property
    def message(self) -> str:
        """The message template the paste has: an older wording's, or the record's."""
        w = self.answer.match.wording
        return (w.message if w is not None else "") or self.record.error_message

    @property
    def wording_diff(self) -> WordDiff | None:
        """An older wording matched: the record's current message against the paste's
        words (what releases since print instead)."""
        if self.answer.match.wording is None:
            return None
        return word_diff(self.record.error_message, self.answer.match.text)


def build_cards(
    text: Text, result: MatchResult, to_text: Callable[[int], int] | None = None
) -> list[Card]:
    """One card per error of the paste (``result.answers``: root cause first, the order
    of the summary above them); only the first ``MAX_CARDS`` get their title filled with
    the paste's values (the cards past it are counted, not rendered). ``to_text`` maps the
    spans into ``text`` when it is the excerpt of an uploaded log (``LogMatch``)."""
    cards: list[Card] = []
    for a in result.answers:
        m = a.match
        span = m.span if to_text is None else (to_text(m.span[0]), to_text(m.span[1]))
        before, hit, after, cut_before, cut_after = line_pieces(text, span, m.text)
        solutions = m.record.solutions or []
        cards.append(
            Card(
                answer=a,
                before=before,
                hit=hit,
                after=after,
                cut_before=cut_before,
                cut_after=cut_after,
                first_solution=str(solutions[0]) if solutions else "",
                others=[r for r in m.same_message if r.pk != m.record.pk],
                filled=filled_title(m) if len(cards) < MAX_CARDS else None,
            )
        )
    return cards


def filled_title(m: MatchView) -> FilledMessage:
    if m.wording is not None:  # the paste has an older wording: its values fill that one
        return fill_message(m.wording.message or m.record.error_message, m.captures, ())
    explanation = explanation_for(m.record)
    code_values = explanation.values if explanation is not None else ()
    return fill_message(m.record.error_message, m.captures, code_values)


def summary_rows(cards: list[Card]) -> list[AnswerView]:
    """The summary table: one row per card, from the same list in the same order, so the
    count above it, its rows and the cards below it tell one story."""
    return [c.answer for c in cards]


def limit_context() -> dict[str, int]:
    """The limits the form states and app.js enforces before sending."""
    return {"max_paste": settings.KB_MAX_PASTE_BYTES, "max_log": settings.KB_MAX_LOG_BYTES}


def _respond(request: HtmxHttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    context = {**limit_context(), **context}
    template = "kb/paste.html#results" if request.htmx else "kb/paste.html"
    return render(request, template, context, status=status)


def _too_large(request: HtmxHttpRequest, exc: TooLarge) -> HttpResponse:
    """The refusal in the paste page's own results area (the form stays, without htmx too)."""
    return _respond(request, {"refusal": exc.refusal}, status=413)


@require_safe
def paste_page(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "kb/paste.html", {**limit_context(), "autofocus": True})


@never_cache
@vary_on_headers("HX-Request")
@csrf_exempt  # the CSRF check runs in _match, after the upload handler is in place
@require_http_methods(["GET", "HEAD", "POST"])
def match_view(request: HtmxHttpRequest) -> HttpResponse:
    if request.method != "POST":
        # Pastes belong in POST bodies, never in URLs: a GET just goes back to the form.
        return redirect("paste")
    # kb.ops.middleware has refused a body too large to read; the handler bounds the log file.
    handler = BoundedUploadHandler(request, settings.KB_MAX_LOG_BYTES)
    request.upload_handlers = [handler]
    try:
        request.POST  # noqa: B018 - parse now, so an oversized text field is a friendly 413
    except RequestDataTooBig:
        return _too_large(request, TooLarge("paste", settings.KB_MAX_PASTE_BYTES))
    if handler.refused is not None:
        return _too_large(request, handler.refused)
    return _match(request)


@csrf_protect
def _match(request: HtmxHttpRequest) -> HttpResponse:
    upload = request.FILES.get(LOG_FIELD)
    got: LogMatch | None = None
    text: Text
    paste = ""
    if upload is not None and upload.size:
        what, limit = "file", settings.KB_MAX_LOG_BYTES
        try:  # a .gz log is read as the log it holds, bounded like any other; in blocks
            got = match_log(gunzip_blocks(upload.chunks(), what, limit), max_bytes=limit)
        except PasteTooLarge as exc:
            return _too_large(request, from_matcher(exc, what))
        except TooLarge as exc:
            return _too_large(request, exc)
        except ValueError as exc:
            unreadable = Refusal(400, "That file cannot be read", str(exc))
            return _respond(request, {"refusal": unreadable}, status=400)
        text = got.text
        echo = ""  # a whole log is not echoed back into the textarea
        source = {"name": upload.name, "size": upload.size}
    else:
        text = paste = request.POST.get("text", "")
        what, limit = "paste", settings.KB_MAX_PASTE_BYTES
        echo = paste
        source = None
    if isinstance(text, str) and not text.strip():  # an excerpt: a whole log, never empty
        return _respond(request, {"text": echo, "empty": True, "source": source})
    if got is not None:
        result = got.result
    else:
        try:
            result = match_text(paste, max_bytes=limit)  # the matcher measures the text
        except PasteTooLarge as exc:
            return _too_large(request, from_matcher(exc, what))
    matched(result)  # usage signals: counted in memory, never fails the paste
    to_text = got.to_text if got is not None else None
    cards = build_cards(text, result, to_text)
    groups = summary_rows(cards)
    urls = RecordUrls()  # the Markdown copy and the template link the same records
    show_summary = len(groups) > 1 or any(g.count > 1 for g in groups)
    normalised = result.normalised_text
    context = {
        "text": echo,
        "source": source,
        "result": result,
        "cards": cards,  # every known error: the count, and the summary's rows
        "shown_cards": cards[:MAX_CARDS],
        "unshown_cards": max(0, len(cards) - MAX_CARDS),
        "groups": groups if show_summary else [],
        "suggestions": result.suggestions,  # counted whole
        "shown_suggestions": (
            result.suggestions[:SUGGESTIONS_BESIDE_CARDS] if cards else result.suggestions
        ),
        "normalised": normalised[:NORMALISED_PREVIEW],
        "normalised_cut": len(normalised) > NORMALISED_PREVIEW,
        "steps": result.steps,
        "elapsed_ms": result.elapsed_ms,
        "markdown": summary_markdown(request, text, result, to_text, urls) if cards else "",
        "record_urls": urls,
        # Nothing known found: say what the knowledge base covers (cached per revision).
        "coverage": [] if cards else covered_repositories(),
    }
    return _respond(request, context)


def summary_markdown(
    request: HttpRequest,
    text: Text,
    result: MatchResult,
    to_text: Callable[[int], int] | None = None,
    urls: RecordUrls | None = None,
) -> str:
    """The result as Markdown for a ticket, behind the page's "Copy as Markdown" button."""
    return formats.render(
        "markdown",
        report_data(result, text, absolute=request.build_absolute_uri, to_text=to_text, urls=urls),
    )
