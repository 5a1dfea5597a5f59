"""Every write of the learning loop, as keyword-only functions tested without views.

Views, the API, the admin and the commands call these; none of them writes a loop table
itself. The rules that hold here:

- a report stores only what `preview_report` shows: the paste's error lines, redacted
  (`kb.loop.text`), computed again on the server whatever the client sent back;
- reports of one error fold into one gap (an exact key first, then the fuzzy fold over
  the gaps sharing the report's rarest words, read through `GapWord`), in the report's
  transaction;
- a vote counts once per voter, record, step and day, and keeps its record's tally
  (`kb.loop.votes`, named here too);
- a gap closes when a published record matches its samples (`kb.loop.closing`, called by
  whatever publishes: the curator save, `set_status`, the importer);
- an accepted proposal is a curator edit (`kb.records.services.save_curator_edit`), so its field
  becomes curated: a re-import keeps it as a conflict and `export_records` has it.

The bulk jobs (retention purge, JSONL export) are `kb.loop.retention`'s, named here too.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from kb.loop.closing import close_matched_gaps
from kb.loop.models import Gap, GapWord, Proposal
from kb.loop.retention import export_jsonl, gap_json, purge
from kb.loop.text import gaps as folding
from kb.loop.text.derive import pattern_from_template
from kb.loop.text.error_lines import clip_line, find_error_lines
from kb.loop.text.redact import PLACEHOLDERS, Redacted, redact
from kb.loop.votes import VOTER_COOKIE, cast_vote, set_voter_cookie, voter_id
from kb.matching.holder import match_text
from kb.records.models import ErrorRecord, Status
from kb.records.schema import BY_KEY
from kb.records.services import save_curator_edit

__all__ = [
    "HONEYPOT",
    "VOTER_COOKIE",
    "FiledReport",
    "ReportPreview",
    "TooManyPending",
    "accept_proposal",
    "cast_vote",
    "close_matched_gaps",
    "draft_from_gap",
    "export_jsonl",
    "file_report",
    "gap_json",
    "preview_report",
    "propose",
    "purge",
    "reject_proposal",
    "set_voter_cookie",
    "voter_id",
]

#: The nearest existing records kept with a gap (the matcher's suggestions for it).
NEAREST = 5
_WORD_CHARS = GapWord._meta.get_field("word").max_length
_AUTHOR_CHARS = Proposal._meta.get_field("author").max_length


# --- reports ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReportPreview:
    """Exactly what a report would store: the redacted error lines, joined, and what the
    redaction replaced. ``headline`` is the line the report is filed under."""

    lines: list[str]
    redacted: str
    summary: str
    headline: str = ""


@dataclass(frozen=True, slots=True)
class FiledReport:
    gap: Gap
    created: bool
    preview: ReportPreview


def preview_report(*, text: str) -> ReportPreview:
    """The error lines of ``text``, redacted, and the summary of what was replaced.

    Redacted whole before it is cut into lines: a token a log wrapped onto the next line
    goes with its head only when redaction sees both lines, and cut first, the tail would
    be kept whenever that next line is an error line too."""
    found = find_error_lines(redact(_clean_text(text)).text, clip=False)
    lines = [clip_line(line.text) for line in found]
    # What the kept lines hold, not the whole paste: the summary speaks of what is stored.
    counts = Counter({p: n for p in PLACEHOLDERS if (n := sum(line.count(p) for line in lines))})
    best = folding.headline(found)
    head = lines[found.index(best)] if best is not None else ""
    summary = Redacted("\n".join(lines), dict(counts)).summary()
    return ReportPreview(lines=lines, redacted="\n".join(lines), summary=summary, headline=head)


def file_report(
    *, text: str, now: datetime | None = None, preview: ReportPreview | None = None
) -> FiledReport:
    """Store a report of ``text``: its gap gains a count and a sample, or a new gap opens.
    ``preview`` is this server's own `preview_report` of ``text`` when the caller has it
    already (never a client's copy). Raises ``ValidationError`` when the text has no line
    to report."""
    preview = preview or preview_report(text=text)
    if not preview.headline:
        raise ValidationError("There is nothing in this text to report.")
    now = now or timezone.now()
    template = folding.template_of(preview.headline) or preview.headline[:300]
    nearest = _nearest(preview.headline)
    try:
        with transaction.atomic():
            gap, created = _fold(template, preview.headline, nearest, now)
    except IntegrityError:  # a concurrent report opened the same gap: fold into it
        with transaction.atomic():
            gap, created = _fold(template, preview.headline, nearest, now)
    return FiledReport(gap=gap, created=created, preview=preview)


def gap_key(template: str) -> str:
    """The exact-fold key of a template (`kb.loop.text.gaps.key_of`), as stored."""
    return hashlib.sha256(folding.key_of(template).encode()).hexdigest()


def _fold(template: str, sample: str, nearest: list[dict], now: datetime) -> tuple[Gap, bool]:
    gap = Gap.objects.filter(key=gap_key(template)).first() or _similar_gap(template)
    if gap is None:
        gap = Gap.objects.create(
            key=gap_key(template),
            template=template,
            count=1,
            first_seen=now,
            last_seen=now,
            samples=[sample],
            nearest=nearest,
        )
        words = {w[:_WORD_CHARS] for w in folding.words_of(template)}
        GapWord.objects.bulk_create([GapWord(gap=gap, word=w) for w in sorted(words)])
        return gap, True
    # Read again under a row lock: two reports of one gap at once must both count (on
    # PostgreSQL; SQLite's write transactions are serialised already).
    gap = Gap.objects.select_for_update().get(pk=gap.pk)
    reopened = gap.closed_at is not None
    if reopened:
        # Reported again although a record closed it: that record no longer answers this
        # error (edited, retired), so the gap is open work again.
        gap.closed_at = gap.closed_by = None
    folded = folding.Gap(id=0, template=gap.template, count=gap.count, samples=list(gap.samples))
    folded.add(sample, None)  # the sample rule (first ones kept, last slot follows) is there
    gap.count = folded.count
    gap.samples = folded.samples
    gap.first_seen = min(gap.first_seen, now)
    gap.last_seen = max(gap.last_seen, now)
    gap.nearest = nearest or gap.nearest
    fields = ["count", "samples", "first_seen", "last_seen", "nearest"]
    gap.save(update_fields=[*fields, "closed_at", "closed_by"] if reopened else fields)
    return gap, False


def _similar_gap(template: str) -> Gap | None:
    """The open gap the fuzzy fold puts ``template`` into, read from the gaps sharing its
    rarest words (bounded as `GapIndex` bounds its own candidates)."""
    words = {w[:_WORD_CHARS] for w in folding.words_of(template)}
    if not words:
        return None
    rarity = (
        GapWord.objects.filter(word__in=words, gap__closed_at__isnull=True)
        .values("word")
        .annotate(n=Count("id"))
        .order_by("n", "word")
    )
    rare = [row["word"] for row in rarity[: folding._BLOCK_WORDS]]
    ids: set[int] = set()
    for word in rare:
        postings = GapWord.objects.filter(word=word, gap__closed_at__isnull=True)
        ids.update(
            postings.order_by("-gap_id").values_list("gap_id", flat=True)[: folding._BLOCK_CAP]
        )
    if not ids:
        return None
    stored = list(Gap.objects.filter(pk__in=ids).order_by("pk"))
    index = folding.GapIndex()
    index.load(folding.Gap(id=0, template=g.template) for g in stored)
    found = index.find(template)
    return None if found is None else stored[found.id]


def _nearest(line: str) -> list[dict[str, Any]]:
    """The records the matcher suggests for a reported line, best first."""
    result = match_text(line)
    seen: dict[str, float] = {}
    for m in result.matches:
        seen.setdefault(m.record.pk, 1.0)
    for s in result.suggestions:
        seen.setdefault(s.record.pk, round(s.similarity, 4))
    return [{"record_id": k, "similarity": v} for k, v in list(seen.items())[:NEAREST]]


def draft_from_gap(*, gap: Gap) -> dict[str, Any]:
    """Initial data for the admin's add form: a draft whose pattern matches the gap's
    samples (`kb.loop.text.derive`), or an empty pattern for the curator to write when no
    bounded pattern covers them all."""
    try:
        pattern = pattern_from_template(gap.template, gap.samples)
    except ValueError:
        pattern = ""
    return {"message_pattern": pattern, "error_message": gap.template, "status": Status.DRAFT}


# --- proposals --------------------------------------------------------------------------


def _clean_text(text: str) -> str:
    """Text both databases can store: no NUL, no lone surrogate (a JSON body may carry
    ``"\\ud800"``, which is not Unicode and cannot be encoded), newlines as ``\\n``."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").strip()


#: The proposal form's honeypot: a field no person sees or fills. The page answers a filled
#: one like a stored proposal and drops it; the API, whose clients never send it, refuses
#: a body that has it at all.
HONEYPOT = "website"


class TooManyPending(ValidationError):
    """This address has ``KB_PROPOSALS_PENDING_PER_ADDRESS`` proposals waiting on the
    record already."""


def propose(
    *, record: ErrorRecord, field: str, text: str, author: str = "", submitter: str = ""
) -> Proposal:
    """Store a pending proposal, or answer with the pending one of the same record and
    field that has the same text (a double click, a resend, a flood of one text: no new
    row). Raises ``ValidationError`` for an unknown field, or a text that is empty or
    longer than ``KB_PROPOSAL_MAX_CHARS``; ``TooManyPending`` when ``submitter``
    (`kb.loop.votes.address_digest`; empty: not capped) has
    ``KB_PROPOSALS_PENDING_PER_ADDRESS`` pending proposals on the record already."""
    if field not in Proposal.Field.values:
        raise ValidationError(f"Unknown field {field!r}.")
    text = _clean_text(text if isinstance(text, str) else "")
    if not text:
        raise ValidationError("Write what you did: the text is empty.")
    limit = settings.KB_PROPOSAL_MAX_CHARS
    if len(text) > limit:
        raise ValidationError(f"Keep it under {limit} characters ({len(text)} sent).")
    author = _clean_text(author or "")[:_AUTHOR_CHARS]
    pending = Proposal.objects.filter(record=record, status=Proposal.State.PENDING)
    with transaction.atomic():
        # One proposal of a record at a time decides (a row lock on PostgreSQL; SQLite's
        # write transactions are serialised already), so two identical ones sent at once
        # make one row and a burst cannot slip past the cap.
        ErrorRecord.objects.select_for_update().filter(pk=record.pk).exists()
        same = pending.filter(field=field, text=text).order_by("pk").first()
        if same is not None:
            return same
        cap = settings.KB_PROPOSALS_PENDING_PER_ADDRESS
        if submitter and pending.filter(submitter=submitter).count() >= cap:
            raise TooManyPending(
                f"You have {cap} proposals for this record waiting for a curator already. "
                "Thank you: please wait until they are looked at."
            )
        return Proposal.objects.create(
            record=record, field=field, text=text, author=author, submitter=submitter
        )


def _decide(proposal: Proposal, status: str, user: Any) -> None:
    proposal.status = status
    proposal.decided_at = timezone.now()
    proposal.decided_by = user if getattr(user, "pk", None) else None
    proposal.save(update_fields=["status", "decided_at", "decided_by"])


def _pending(proposal: Proposal) -> Proposal:
    fresh = Proposal.objects.select_for_update().get(pk=proposal.pk)
    if fresh.status != Proposal.State.PENDING:
        raise ValidationError(f"This proposal was {fresh.status} already.")
    return fresh


def accept_proposal(*, proposal: Proposal, user: Any) -> ErrorRecord:
    """Merge the proposal into its record as a curator edit by ``user``: a list field
    gains the text as a new item, a text field gains it as a paragraph."""
    with transaction.atomic():
        fresh = _pending(proposal)
        record = ErrorRecord.objects.get(pk=fresh.record_id)
        spec = BY_KEY[fresh.field]
        current = getattr(record, spec.attr)
        if spec.kind == "list":
            value: Any = [*(current or []), fresh.text]
        else:
            value = f"{current.rstrip()}\n\n{fresh.text}" if current else fresh.text
        setattr(record, spec.attr, value)
        save_curator_edit(
            record=record,
            changed_fields=[spec.attr],
            user=user,
            reason=f"proposal {fresh.pk}: accepted",
            via="proposal",
        )
        _decide(fresh, Proposal.State.ACCEPTED, user)
    proposal.refresh_from_db()
    return record


def reject_proposal(*, proposal: Proposal, user: Any) -> Proposal:
    with transaction.atomic():
        fresh = _pending(proposal)
        _decide(fresh, Proposal.State.REJECTED, user)
    proposal.refresh_from_db()
    return proposal
