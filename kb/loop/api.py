"""The learning loop's JSON twins: report an unknown error, vote on an answer, propose a
fix, and (curators only) read the gaps.

Like ``POST /api/match`` these take no session and no CSRF token, so a tool or a script can
call them with a bare ``curl``; abuse is bounded the same way: the body size by
``kb.ops.middleware``, each request counted against the matching rate limit
(``kb.ops.middleware.rate_limit_hit``), and the text's size checked by ``kb.http``. Each part
answers 403 while its setting turns it off. Every write is ``kb.loop.services``'; what a
report stores is redacted on the server, whatever the client sent. ``GET /api/gaps``
reads the session: 401 without one, 403 for anyone but curators and superusers.

A vote's "same client" is the voter id the server signed for the browser when it sends
one, else its address under a salt that lives one day (``kb.loop.votes`` says why): either
way a client votes once per record and day, and nothing about its address is kept past
the day. One address counts at most ``KB_VOTERS_PER_ADDRESS`` voters per record and day,
whatever ids they carry; a vote past that answers 200 with ``"counted": false,
"capped": true``, not 429: the request was well formed and is answered at once, nothing
changes by retrying it later the same day (which 429 and its ``Retry-After`` would invite
a client to do), and a person behind a shared address is told their vote is not needed
rather than shown an error.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router, Schema
from ninja import Status as Reply
from pydantic import BeforeValidator, Field, StrictBool

from kb.browse.selectors import visible_record
from kb.http import (
    ErrorOut,
    Refusal,
    RefusalOut,
    TooLarge,
    ValidationOut,
    check,
    no_store,
    refusal_response,
    text_bytes,
)
from kb.loop import services
from kb.loop.gates import gate
from kb.loop.models import Gap
from kb.loop.votes import AddressCapReached, address_digest
from kb.records.access import is_curator

router = Router(tags=["learning loop"])

# 400 is also django-ninja's own answer to an unreadable body (``{"detail": ...}`` only).
REFUSALS: dict[int, Any] = {
    400: ErrorOut,
    403: RefusalOut,
    413: RefusalOut,
    415: RefusalOut,
    429: RefusalOut,
}
#: The most gaps one ``GET /api/gaps`` answers with.
MAX_GAPS = 1000


# Text fields must hold something besides spaces (what is left after trimming is stored).
SOME_TEXT = r"[^\s\x00]"


class ReportIn(Schema):
    text: str = Field(description="The paste the unknown error is in.", pattern=SOME_TEXT)
    dry_run: StrictBool = Field(False, description="Only show what would be stored.")


class ReportPreviewOut(Schema):
    redacted: str = Field(description="Exactly what would be stored.")
    lines: list[str]
    summary: str = Field(description='What redaction replaced ("1 <email> replaced").')


class ReportFiledOut(Schema):
    gap_id: str
    count: int
    redacted: str


def _whole_number(value: Any) -> int:
    """A JSON integer, as JSON Schema counts them (``2.0`` is one; ``"2"`` and ``true``
    are not), where pydantic's lax mode would take a string and strict mode refuse 2.0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a whole number")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("a whole number")
    return int(value)


StepNumber = Annotated[int, Field(ge=1), BeforeValidator(_whole_number)]


class FeedbackIn(Schema):
    record_id: str
    verdict: Literal["fixed", "not_fixed", "wrong_match"]
    step: StepNumber | None = Field(None, description="1-based solution step")


class FeedbackOut(Schema):
    record_id: str
    verdict: str
    step: int | None
    counted: bool = Field(
        description="False: this client voted the same way today already, or capped."
    )
    capped: bool = Field(
        description="True: not counted, this address counted its share of voters for the "
        "record today (KB_VOTERS_PER_ADDRESS)."
    )


class ProposalIn(Schema):
    record_id: str
    field: Literal[
        "solutions", "triggerScenarios", "commonSituations", "documentation", "preventionTips"
    ]
    text: str = Field(max_length=settings.KB_PROPOSAL_MAX_CHARS, pattern=SOME_TEXT)
    author: str = Field("", max_length=100)
    # The form's honeypot (``services.HONEYPOT``), declared so that a body carrying it is
    # refused (400) rather than its key silently dropped.
    website: Any = Field(
        None, description="Never send it: the form's honeypot; a proposal with it is refused."
    )

    def has_honeypot(self) -> bool:
        return services.HONEYPOT in self.model_fields_set


class ProposalOut(Schema):
    id: int
    status: str


class NearestOut(Schema):
    record_id: str
    similarity: float


class GapOut(Schema):
    id: str
    template: str
    count: int
    first_seen: str
    last_seen: str
    samples: list[str]
    nearest: list[NearestOut]
    closed_by: str | None


class GapsOut(Schema):
    gaps: list[GapOut]


def _open_record(request: HttpRequest, setting: str, record_id: str) -> tuple[Any, Any]:
    """``(record, None)`` for a record this request may act on, else ``(None, refusal)``:
    the gate's, or a 404 for a record the requester cannot see (a draft, a typo)."""
    refused = gate(request, setting)
    if refused is not None:
        return None, refused
    record = visible_record(record_id, request.user)
    if record is None:
        return None, Reply(404, {"detail": "No such record"})
    return record, None


def _bad(request: HttpRequest, detail: str) -> HttpResponse:
    return refusal_response(request, Refusal(400, "Bad request", detail))


@router.post(
    "/reports",
    response={200: ReportPreviewOut, 201: ReportFiledOut, **REFUSALS, 422: ValidationOut},
    description=(
        "201 with the gap when stored; 200 with what would be stored for a dry run, and for "
        "a text without any error line (nothing is stored then)."
    ),
    summary="Report an unknown error (dry_run: see what would be stored)",
    url_name="reports",
)
def reports(request: HttpRequest, body: ReportIn) -> Any:
    refused = gate(request, "KB_REPORTS_ENABLED")
    if refused is not None:
        return refused
    try:
        check("paste", text_bytes(body.text), settings.KB_MAX_PASTE_BYTES)
    except TooLarge as exc:
        return refusal_response(request, exc.refusal)
    preview = services.preview_report(text=body.text)
    if body.dry_run or not preview.headline:
        # Nothing is stored: the answer is what would be (no line at all, for a text with
        # nothing to report), and 200 says nothing was filed.
        shown = {"redacted": preview.redacted, "lines": preview.lines, "summary": preview.summary}
        return no_store(JsonResponse(shown))
    filed = services.file_report(text=body.text, preview=preview)
    gap = {"gap_id": str(filed.gap.pk), "count": filed.gap.count, "redacted": preview.redacted}
    return no_store(JsonResponse(gap, status=201))


@router.post(
    "/feedback",
    response={200: FeedbackOut, 201: FeedbackOut, 404: ErrorOut, **REFUSALS, 422: ValidationOut},
    summary="This fixed it / Didn't help / Wrong match, once per client, record and day",
    description=(
        "201 when counted; 200 when this client voted the same way today already, or when "
        "its address counted its share of voters for the record today (`capped`)."
    ),
    url_name="feedback",
)
def feedback(request: HttpRequest, body: FeedbackIn) -> Any:
    """A step the record does not have is a 404, like a record it cannot see: the request
    is well formed, what it names does not exist."""
    record, refused = _open_record(request, "KB_FEEDBACK_ENABLED", body.record_id)
    if record is None:
        return refused
    if body.step is not None and body.step > len(record.solutions or []):
        return Reply(404, {"detail": f"This record has no solution step {body.step}."})
    voter = services.voter_id(request)
    counted = capped = False
    try:
        counted = services.cast_vote(
            record=record, verdict=body.verdict, voter=voter.id, source=voter.source, step=body.step
        )
    except AddressCapReached:
        capped = True
    shown = {"record_id": record.pk, "verdict": body.verdict, "step": body.step}
    return JsonResponse(
        {**shown, "counted": counted, "capped": capped}, status=201 if counted else 200
    )


@router.post(
    "/proposals",
    response={201: ProposalOut, 404: ErrorOut, **REFUSALS, 422: ValidationOut},
    summary="Propose a solution step, trigger, situation, note or tip (pending until accepted)",
    url_name="proposals",
)
def proposals(request: HttpRequest, body: ProposalIn) -> Any:
    """The same text pending on the same record and field answers as that proposal (201,
    its id; no new row); past ``KB_PROPOSALS_PENDING_PER_ADDRESS`` pending proposals of one
    address on the record, 429."""
    record, refused = _open_record(request, "KB_PROPOSALS_ENABLED", body.record_id)
    if record is None:
        return refused
    if body.has_honeypot():
        return _bad(request, f'A proposal has no field "{services.HONEYPOT}".')
    try:
        proposal = services.propose(
            record=record,
            field=body.field,
            text=body.text,
            author=body.author,
            submitter=address_digest(request),
        )
    except services.TooManyPending as exc:
        refusal = Refusal(429, "Too many proposals waiting", " ".join(exc.messages))
        return refusal_response(request, refusal)
    except ValidationError as exc:
        return _bad(request, " ".join(exc.messages))
    return Reply(201, {"id": proposal.pk, "status": proposal.status})


@router.get(
    "/gaps",
    response={200: GapsOut, 401: ErrorOut, 403: ErrorOut, 422: ValidationOut},
    summary="Unknown errors as reported, most reported first (curators only)",
    url_name="gaps",
)
def gaps(
    request: HttpRequest,
    state: Literal["all", "open", "closed"] = "all",
    limit: int = Query(100, ge=1, le=MAX_GAPS),
) -> Any:
    if not getattr(request.user, "is_authenticated", False):
        return Reply(401, {"detail": "Log in as a curator to read the gaps."})
    if not is_curator(request.user):
        return Reply(403, {"detail": "Only curators read the gaps."})
    found = Gap.objects.order_by("-count", "pk")
    if state != "all":
        found = found.filter(closed_at__isnull=state == "open")
    return no_store(JsonResponse({"gaps": [services.gap_json(g) for g in found[:limit]]}))


__all__ = ["router"]
