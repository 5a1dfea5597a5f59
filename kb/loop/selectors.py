"""The learning loop's reads: what the work queue, the record page and the API show.

Each function returns a queryset (or a small dict built from one query) ordered the way
its section shows it, so a caller slices one page (``page_of``) and never counts the
whole table: with many gaps, votes and usage rows a ``COUNT(*)`` per section would cost
more than the page itself. Each read starts from the table that bounds it (usage rows in
the window, record tallies, pending proposals) and probes records by primary key, rather
than walking every record.

``UsageDay.record_id`` is not a foreign key (see ``kb.loop.models``), so usage is joined
to records by id here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import islice
from typing import Any

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, QuerySet, Sum
from django.utils import timezone
from django.utils.text import slugify

from kb.loop import services
from kb.loop.models import Gap, Proposal, RecordTally, UsageDay, Vote
from kb.loop.text.gaps import VAR
from kb.records.models import ErrorRecord

# What a queue row needs of a record: never the source code or the long analysis fields.
RECORD_FIELDS = ("id", "slug", "repo", "error_message", "status", "severity")


def _since(days: int, today: date | None) -> date:
    return (today or timezone.localdate()) - timedelta(days=days)


def open_gaps() -> QuerySet[Gap]:
    """Open gaps, the most reported first (the ``kb_gap_open_count`` index's order)."""
    return Gap.objects.filter(closed_at__isnull=True).order_by("-count", "pk")


def closed_gaps() -> QuerySet[Gap]:
    """Gaps a published record closed, the latest first, with the record that closed them."""
    return (
        Gap.objects.filter(closed_at__isnull=False)
        .select_related("closed_by")
        .only("id", "template", "count", "closed_at", *(f"closed_by__{f}" for f in RECORD_FIELDS))
        # Ties on the time a run closed them broken as the index stores them (its
        # backward walk), so a page is read off kb_gap_open_count without a sort.
        .order_by("-closed_at", "count", "-pk")
    )


def hit_records(days: int, *, today: date | None = None) -> QuerySet:
    """``{"record_id", "hits"}`` rows: records hit in the last ``days`` days, the most hit
    first (one aggregate over the window's usage rows)."""
    return (
        UsageDay.objects.filter(day__gte=_since(days, today), hits__gt=0)
        .exclude(record_id="")
        .values("record_id")
        .annotate(hits=Sum("hits"))
        .order_by("-hits", "record_id")
    )


def hit_records_without_solution(
    days: int, *, today: date | None = None, start: int = 0, wanted: int = 21
) -> Iterator[dict[str, Any]]:
    """``hit_records`` rows of records that have no solution written, each with its
    ``record``, from the ``start``-th such row on.

    Only the enriched records have solutions, so nearly every hit record qualifies: the
    ranking is read first and the records of a slice of it checked in one query, growing
    the slice only when it was not enough. Checking each usage row's record inside the
    aggregate instead costs a primary-key probe per usage row, more than the aggregate.
    """
    ranked = hit_records(days, today=today)
    seen = offset = 0
    step = max(wanted + start, 1) * 2
    while True:
        rows = list(ranked[offset : offset + step])
        found = ErrorRecord.objects.filter(pk__in=[r["record_id"] for r in rows])
        records = {r.pk: r for r in found.only(*RECORD_FIELDS, "solutions")}
        for row in rows:
            record = records.get(row["record_id"])
            if record is None or record.solutions:
                continue
            seen += 1
            if seen > start:
                yield {**row, "record": record}
        if len(rows) < step:
            return
        offset += step
        step *= 2


def records_by_complaints() -> QuerySet:
    """``{"record_id", "complaints", "not_fixed", "wrong_match", "fixed"}`` rows: records
    with the most record-level "Didn't help" and "Wrong match" votes first, read off the
    ``kb_tally_complaints`` index (`RecordTally`, kept by `kb.loop.votes.cast_vote`); the
    fixes are on the same row, since a complaint count reads differently next to them."""
    return (
        RecordTally.objects.filter(complaints__gt=0)
        .values("record_id", "complaints", "not_fixed", "wrong_match", "fixed")
        .order_by("-complaints", "record_id")
    )


def pending_proposals() -> QuerySet[Proposal]:
    """Proposals waiting for a curator, the oldest first (first come, first decided)."""
    return (
        Proposal.objects.filter(status=Proposal.State.PENDING)
        .select_related("record")
        .only(
            "id", "field", "text", "author", "created_at", *(f"record__{f}" for f in RECORD_FIELDS)
        )
        .order_by("created_at", "pk")
    )


def records_not_hit(days: int, *, today: date | None = None) -> QuerySet[ErrorRecord]:
    """Published records no paste matched in the last ``days`` days (candidates to check
    or retire), in the published list's order: its index (``kb_record_listing``) is walked
    without a sort, each record is one probe of the usage table's ``(record_id, day)`` key,
    and a page stops after its rows."""
    hit = UsageDay.objects.filter(
        record_id=OuterRef("pk"), day__gte=_since(days, today), hits__gt=0
    )
    return (
        ErrorRecord.objects.published()
        .filter(~Exists(hit))
        .only(*RECORD_FIELDS)
        .order_by("repo", "slug", "id")
    )


def vote_counts(record: ErrorRecord) -> dict[str, Any]:
    """``{"record": {verdict: n}, "steps": {step: {verdict: n}}}`` for one record, from one
    query; every verdict is present (0 when nobody chose it)."""
    out: dict[str, Any] = {"record": dict.fromkeys(Vote.Verdict.values, 0), "steps": {}}
    rows = (
        Vote.objects.filter(record=record)
        .values("step", "verdict")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        if row["step"] is None:
            out["record"][row["verdict"]] = row["n"]
        else:
            step = out["steps"].setdefault(row["step"], dict.fromkeys(Vote.Verdict.values, 0))
            step[row["verdict"]] = row["n"]
    return out


def enough_voters(votes: QuerySet[Vote], *, at_most: int | None = None) -> bool:
    """Whether ``votes`` come from ``KB_VOTE_THRESHOLD`` distinct voters or more: the one
    rule for when votes may change what the public sees.

    Voters are counted by source (the address's digest of the day, `kb.loop.votes`), not
    by voter id: ids cost nothing to collect, an address a day does. ``at_most``, the
    number of votes when the caller knows it, skips the count when even that many votes
    could not reach the threshold (each vote has one source)."""
    threshold = settings.KB_VOTE_THRESHOLD
    if at_most is not None and at_most < threshold:
        return False
    return votes.values("source").distinct().count() >= threshold


def step_order(record: ErrorRecord, counts: dict[str, Any] | None = None) -> list[int]:
    """The record's 1-based solution steps in the order the page shows them.

    The curator's order until votes on the steps come from enough distinct voters
    (`enough_voters`: a couple of votes are noise, one address's votes are one voice, and
    reordering on them would make the page jump between visits); then by "fixed" minus
    "didn't help", ties keeping the curator's order.
    """
    steps = list(range(1, len(record.solutions or []) + 1))
    per_step = (counts if counts is not None else vote_counts(record))["steps"]
    total = sum(sum(v.values()) for s, v in per_step.items() if s in steps)
    step_votes = Vote.objects.filter(record=record, step__in=steps)
    if not enough_voters(step_votes, at_most=total):
        return steps

    def helpfulness(step: int) -> int:
        votes = per_step.get(step, {})
        return votes.get(Vote.Verdict.FIXED, 0) - votes.get(Vote.Verdict.NOT_FIXED, 0)

    return sorted(steps, key=lambda s: -helpfulness(s))


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a section: its rows, and whether there are more (no ``COUNT``)."""

    rows: list[Any]
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def page_of(
    rows: QuerySet | Callable[[int, int], Iterator[Any]] | Iterable[Any], number: int, size: int
) -> Page:
    """Rows ``size * (number - 1)`` onwards; one row more is read to know if a next page
    exists. ``rows`` is a queryset (sliced in SQL), a function of (start, wanted) yielding
    rows from ``start`` on, or any iterable (read up to the page's end)."""
    number = max(1, number)
    start = (number - 1) * size
    if isinstance(rows, QuerySet):
        got = list(rows[start : start + size + 1])
    elif callable(rows):
        got = list(islice(rows(start, size + 1), size + 1))
    else:
        got = list(islice(rows, start, start + size + 1))
    return Page(rows=got[:size], number=number, has_next=len(got) > size)


def gap_draft(gap_id: str) -> dict[str, Any]:
    """The record add form's initial data for "Create a record from this gap" (empty for
    an unknown id): ``draft_from_gap``'s pattern and message, with a suggested id and slug
    the curator may change."""
    known = gap_id.isascii() and gap_id.isdecimal()  # "²" is a digit int() refuses
    gap = Gap.objects.filter(pk=int(gap_id)).first() if known else None
    if gap is None:
        return {}
    draft = services.draft_from_gap(gap=gap)
    # The record's message is a template in the dataset's own notation, where a variable
    # is a ``{}`` placeholder (the validation renders those with sample values).
    message = str(draft.get("error_message", gap.template)).replace(VAR, "{}")
    return {
        "id": f"gap-{gap.pk}",
        "slug": slugify(gap.template.replace(VAR, " "))[:60] or f"gap-{gap.pk}",
        "severity": "error",
        **draft,
        "error_message": message,
    }


def records_by_id(ids: list[str]) -> dict[str, ErrorRecord]:
    """The queue rows' records in one query (rows that name a deleted record get none)."""
    return {r.pk: r for r in ErrorRecord.objects.filter(pk__in=ids).only(*RECORD_FIELDS)}
