"""The learning loop's tables: gaps (unknown errors as reported), proposals, votes, usage.

What is never stored, by construction: a paste, a client address, a cookie value. A gap
holds redacted error lines only (`kb.loop.text.redact` ran on them before they reach a
model); a vote holds an HMAC of the browser's signed-cookie id and the day, so two votes of
one browser on one day collide and nothing links a voter across days; usage is counts per
record and day.

`UsageDay.record_id` is not a foreign key on purpose: deleting a record must not cost a
scan of its usage, and a miss has no record at all (``""``). The work queue joins by id.

The tables keep the ``kb_`` names they were created with while the loop's models were part of
the records app (``Meta.db_table``): moving them to this app changed no table.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from kb.records.models import ErrorRecord

__all__ = ["Gap", "GapWord", "Proposal", "RecordTally", "UsageDay", "Vote", "VoterSalt"]


class Gap(models.Model):
    """One unknown error, with the reports of it folded together (`kb.loop.text.gaps`)."""

    # The exact-fold key: a digest of `kb.loop.text.gaps.key_of(template)` of the first
    # report, so a report with the same key finds its gap by one indexed lookup.
    key = models.CharField(max_length=64, unique=True, db_index=True)
    template = models.TextField()
    count = models.PositiveIntegerField(default=0)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    samples = models.JSONField(default=list, blank=True, help_text="Redacted error lines.")
    nearest = models.JSONField(
        default=list, blank=True, help_text='[{"record_id": ..., "similarity": ...}]'
    )
    closed_by = models.ForeignKey(
        ErrorRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="closed_gaps"
    )
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "kb_gap"
        # The work queue lists open gaps by count; the API lists all gaps by count.
        indexes = [
            models.Index(fields=["closed_at", "-count"], name="kb_gap_open_count"),
            models.Index(fields=["-count"], name="kb_gap_count"),
        ]

    def __str__(self) -> str:
        return f"gap {self.pk}: {self.template[:60]}"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


class GapWord(models.Model):
    """The fuzzy fold's postings: a report is only compared with the gaps sharing one of
    its rarest words (`kb.loop.text.gaps.GapIndex`), whatever the number of gaps."""

    gap = models.ForeignKey(Gap, on_delete=models.CASCADE, related_name="words")
    word = models.CharField(max_length=64)

    class Meta:
        db_table = "kb_gapword"
        constraints = [models.UniqueConstraint(fields=["word", "gap"], name="kb_gapword_unique")]

    def __str__(self) -> str:
        return self.word


class Proposal(models.Model):
    """Text someone proposed for a record: pending until a curator accepts or rejects it.
    Untrusted: rendered as text everywhere, merged only through the curated path."""

    # The dataset keys a proposal may add to (each a curatable field), and their labels.
    class Field(models.TextChoices):
        SOLUTIONS = "solutions", "Solution step"
        TRIGGER_SCENARIOS = "triggerScenarios", "Trigger"
        COMMON_SITUATIONS = "commonSituations", "Common situation"
        DOCUMENTATION = "documentation", "Note"
        PREVENTION_TIPS = "preventionTips", "Prevention tip"

    class State(models.TextChoices):
        """Pending until a curator decides; only accepted text reaches a record."""

        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    record = models.ForeignKey(ErrorRecord, on_delete=models.CASCADE, related_name="proposals")
    field = models.CharField(max_length=32, choices=Field)
    text = models.TextField()
    author = models.CharField(max_length=100, blank=True)
    # Who sent it, as far as the per-record cap needs to know: an HMAC of the client's
    # address under the day's salt (`kb.loop.votes.day_salt`), never the address, and
    # unlinkable to it once that salt is gone (`kb.loop.votes.address_digest`).
    submitter = models.CharField(max_length=64, blank=True, default="", editable=False)
    status = models.CharField(max_length=16, choices=State, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "kb_proposal"
        indexes = [models.Index(fields=["status", "created_at"], name="kb_proposal_status")]

    def __str__(self) -> str:
        return f"proposal {self.pk} ({self.status}) for {self.record_id}"


class Vote(models.Model):
    """One browser's verdict on a record (or one of its solution steps) on one day."""

    class Verdict(models.TextChoices):
        """What the reader says of the answer (the labels are the buttons' words)."""

        FIXED = "fixed", "This fixed it"
        NOT_FIXED = "not_fixed", "Didn't help"
        WRONG_MATCH = "wrong_match", "Wrong match"

    day = models.DateField()
    voter = models.CharField(max_length=64)
    # The address the vote came from, as that day's digest (`kb.loop.votes.voter_id`),
    # whatever voter id it carried: what caps the voters one address counts for a record a
    # day, and what the steps' order counts distinct voters by. Never the address itself.
    source = models.CharField(max_length=64, blank=True, default="")
    record = models.ForeignKey(ErrorRecord, on_delete=models.CASCADE, related_name="votes")
    verdict = models.CharField(max_length=16, choices=Verdict)
    step = models.PositiveSmallIntegerField(null=True, blank=True)  # 1-based solution step

    class Meta:
        db_table = "kb_vote"
        # NULLs are distinct in a plain unique constraint, so a record-level vote (no step)
        # gets its own partial constraint: one vote per voter, record, step and day.
        constraints = [
            models.UniqueConstraint(
                fields=["voter", "record", "step", "day"],
                condition=Q(step__isnull=False),
                name="kb_vote_one_per_step_day",
            ),
            models.UniqueConstraint(
                fields=["voter", "record", "day"],
                condition=Q(step__isnull=True),
                name="kb_vote_one_per_day",
            ),
        ]
        indexes = [
            models.Index(fields=["record", "verdict"], name="kb_vote_record"),
            models.Index(fields=["day"], name="kb_vote_day"),
            models.Index(fields=["record", "day", "source"], name="kb_vote_source"),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} on {self.record_id}"


class RecordTally(models.Model):
    """A record's record-level votes, counted as `kb.loop.votes.cast_vote` casts them.

    Why a tally beside the votes: the work queue ranks records by complaints, and ranking
    by an aggregate over every vote reads the whole vote table at each page; an indexed
    column gives the first page by reading the index's first rows. Votes on one solution
    step are about that step (they order the steps), so they are not counted here. The
    vote rows stay the source: `kb.loop.votes.recount` rebuilds a tally from them (the
    migration's backfill and the retention purge do).
    """

    record = models.OneToOneField(
        ErrorRecord, primary_key=True, on_delete=models.CASCADE, related_name="tally"
    )
    fixed = models.PositiveIntegerField(default=0)
    not_fixed = models.PositiveIntegerField(default=0)
    wrong_match = models.PositiveIntegerField(default=0)
    # "Didn't help" plus "Wrong match": the queue's order, kept as a column to be indexed.
    complaints = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "kb_recordtally"
        indexes = [models.Index(fields=["-complaints", "record"], name="kb_tally_complaints")]

    def __str__(self) -> str:
        return f"{self.record_id}: {self.complaints} complaints, {self.fixed} fixed"


class VoterSalt(models.Model):
    """The secret of one day that turns a cookieless client's address into that day's voter.

    Why a row, and only for the day: every worker must derive the same voter for the same
    client on the same day (so a cookieless client's second vote is the same vote), and
    once the day is over the row is deleted (`kb.loop.votes.day_salt`), after which no one
    can tell which address a stored voter was: an address has few enough values to be
    found again from a hash whose key is known, so the key must not outlive its day.
    """

    day = models.DateField(primary_key=True)
    salt = models.CharField(max_length=64)

    class Meta:
        db_table = "kb_votersalt"

    def __str__(self) -> str:
        return f"voter salt of {self.day}"


class UsageDay(models.Model):
    """Hits of one record on one day; ``record_id=""`` holds the day's misses."""

    record_id = models.CharField(max_length=64, blank=True)
    day = models.DateField()
    hits = models.PositiveIntegerField(default=0)
    misses = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "kb_usageday"
        constraints = [
            models.UniqueConstraint(fields=["record_id", "day"], name="kb_usageday_unique")
        ]
        # The work queue sums hits per record over a window of days and probes "was this
        # record hit since": with ``hits`` in the index both read the index alone, never
        # the table (benchmarks/bench_loop.py).
        indexes = [models.Index(fields=["record_id", "day", "hits"], name="kb_usageday_hits")]

    def __str__(self) -> str:
        return f"{self.record_id or 'misses'} {self.day}: {self.hits}/{self.misses}"
