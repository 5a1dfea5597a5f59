"""The learning loop's pages: report an unknown error, vote on an answer, propose a fix.

Each is a POST form that works without JavaScript (the answer is a whole page) and with
htmx (the answer is the template's partial, swapped where the form was), like the paste
page. Every write goes through ``kb.loop.services``; this module only reads the form,
applies the gates in the order a refused request costs least (feature off, rate limit,
size), and renders.

The gates: a feature turned off answers 403; requests count against the same rate limit
as matching (``kb.ops.middleware.rate_limit_response``: a report runs the redaction and the folding,
and a flood of votes or proposals is the same abuse as a flood of pastes); the text's size
is checked by ``kb.http``. Refusals are ``kb.http.refusal_response``, so they
read as every other refusal. A report's form carries the paste, so its answers are never cached; and
everything a report or a proposal stores is untrusted text, rendered autoescaped.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from kb.browse.selectors import visible_record
from kb.http import HtmxHttpRequest, TooLarge, check, refusal_response, text_bytes
from kb.loop import services
from kb.loop.gates import flags, gate
from kb.loop.models import Proposal, Vote
from kb.loop.selectors import step_order, vote_counts
from kb.loop.votes import AddressCapReached, address_digest
from kb.records.models import ErrorRecord


def _render(
    request: HtmxHttpRequest, template: str, partial: str, context: dict[str, Any], status: int
) -> HttpResponse:
    name = f"kb/loop/{template}.html"
    return render(request, f"{name}#{partial}" if request.htmx else name, context, status=status)


# ---------------------------------------------------------------------- reports
@never_cache
@vary_on_headers("HX-Request")
@require_POST
def report(request: HtmxHttpRequest) -> HttpResponse:
    """``action=preview`` (the default): what would be stored, with a Send button; nothing
    is stored. ``action=send``: redact again here (the preview the browser holds is not
    trusted) and fold the report into its gap."""
    refused = gate(request, "KB_REPORTS_ENABLED")
    if refused is not None:
        return refused
    text = request.POST.get("text", "")
    try:
        check("paste", text_bytes(text), settings.KB_MAX_PASTE_BYTES)
    except TooLarge as exc:
        return refusal_response(request, exc.refusal)
    if not text.strip():
        return _render(request, "report", "report", {"empty": True}, 400)
    preview = services.preview_report(text=text)
    if not preview.lines:
        return _render(request, "report", "report", {"empty": True}, 400)
    if request.POST.get("action") != "send":
        return _render(request, "report", "report", {"preview": preview, "text": text}, 200)
    try:
        filed = services.file_report(text=text, preview=preview)
    except ValidationError:  # nothing in the text the folding can use
        return _render(request, "report", "report", {"empty": True}, 400)
    return _render(request, "report", "report", {"filed": filed, "preview": preview}, 201)


# ---------------------------------------------------------------------- feedback
def parse_vote(value: str, step: str = "") -> tuple[str, int | None]:
    """``verdict`` or ``verdict:step`` (one button carries both: the record page's step
    buttons submit the record's one feedback form). Raises ``ValueError`` when invalid."""
    verdict, _, from_value = value.partition(":")
    raw = from_value or step
    if verdict not in Vote.Verdict.values:
        raise ValueError("unknown verdict")
    number = int(raw) if raw else None
    if number is not None and number < 1:
        raise ValueError("steps count from 1")
    return verdict, number


@never_cache
@vary_on_headers("HX-Request")
@require_POST
def feedback(request: HtmxHttpRequest) -> HttpResponse:
    refused = gate(request, "KB_FEEDBACK_ENABLED")
    if refused is not None:
        return refused
    record = _record(request, request.POST.get("record_id", ""))
    try:
        verdict, step = parse_vote(request.POST.get("verdict", ""), request.POST.get("step", ""))
        if step is not None and step > len(record.solutions or []):
            raise ValueError("no such step")
    except ValueError:
        context = {"record": record, "invalid": True}
        return _render(request, "feedback", "feedback", context, 400)
    voter = services.voter_id(request)
    counted = capped = False
    try:
        counted = services.cast_vote(
            record=record, verdict=verdict, voter=voter.id, source=voter.source, step=step
        )
    except AddressCapReached:  # answered as the API does (kb.loop.api says why)
        capped = True
    context = {
        "record": record,
        "counted": counted,
        "capped": capped,
        "verdict": Vote.Verdict(verdict).label,
        "step": step,
    }
    return _render(request, "feedback", "feedback", context, 201 if counted else 200)


# ---------------------------------------------------------------------- proposals
@never_cache
@vary_on_headers("HX-Request")
@require_POST
def propose(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    """Store a proposal, pending (the same text pending already is that proposal). A filled
    ``website`` field (``services.HONEYPOT``, a field no person sees) is answered like a
    stored proposal and dropped, so a bot learns nothing; past the per-address cap of
    pending proposals on the record, 429 with the form and what to do."""
    refused = gate(request, "KB_PROPOSALS_ENABLED")
    if refused is not None:
        return refused
    record = _record(request, record_id)
    form = {
        "field": request.POST.get("field", ""),
        "text": request.POST.get("text", ""),
        "author": request.POST.get("author", "").strip()[:100],
    }
    try:
        check("paste", text_bytes(form["text"]), settings.KB_MAX_PASTE_BYTES)
    except TooLarge as exc:
        return refusal_response(request, exc.refusal)
    context: dict[str, Any] = {"record": record, "loop": flags(), "fields": Proposal.Field}
    if request.POST.get(services.HONEYPOT, "").strip():
        return _render(request, "propose", "propose", {**context, "sent": True}, 201)
    try:
        services.propose(record=record, submitter=address_digest(request), **form)
    except services.TooManyPending as exc:
        context.update(form=form, errors=exc.messages)
        return _render(request, "propose", "propose", context, 429)
    except ValidationError as exc:
        context.update(form=form, errors=exc.messages)
        return _render(request, "propose", "propose", context, 400)
    return _render(request, "propose", "propose", {**context, "sent": True}, 201)


def _record(request: HtmxHttpRequest, record_id: str) -> ErrorRecord:
    record = visible_record(record_id, request.user) if record_id else None
    if record is None:
        raise Http404("No such record")
    return record


# ---------------------------------------------------------------------- record page
def record_panel(record: ErrorRecord) -> dict[str, Any]:
    """What the record page needs of the loop: which parts are on, and the solution steps
    in the order votes put them (``steps``: ``(number, text)``; ``order_key`` varies the
    page's cached fragment with that order)."""
    solutions = [str(s) for s in (record.solutions or [])]
    order = step_order(record, vote_counts(record)) if len(solutions) > 1 else []
    order = order or list(range(1, len(solutions) + 1))
    return {
        **flags(),
        "steps": [(n, solutions[n - 1]) for n in order],
        "order_key": f"{','.join(map(str, order))}|{int(settings.KB_FEEDBACK_ENABLED)}",
        "fields": Proposal.Field,
    }
