"""Feedback votes: who counts as the same voter, casting a vote, and each record's tally.

The one rule: a vote counts once per voter, record, step and day; a different verdict the
same day replaces the earlier one. Every vote goes through `cast_vote`, which keeps the
record's `RecordTally` in the same transaction, so the work queue's "most complaints"
reads an indexed column and never aggregates the votes. Only record-level votes reach
the tally: a vote on a solution step is about that step (it orders the steps).

Who "the same voter" is (`voter_id`), stored as a digest that changes every day:

- a browser: an HMAC of its ``kb_voter`` id and the day under ``SECRET_KEY``. The id is
  the signed ``kb_voter`` cookie; a browser without one yet gets one derived from its
  CSRF cookie, which every form post carries (the pages' vote buttons are forms), so a
  client that keeps that cookie and drops ``kb_voter`` is still the same voter;
- a client that sends neither cookie (a script calling ``POST /api/feedback``): an HMAC
  of its address under that day's random salt (`VoterSalt`), deleted once the day is
  over. Without this, each cookieless request would be a new voter, bounded only by the
  rate limit; with it, such a client votes once per record and day. No address is
  stored: the salt is what would let anyone find the address again from the digest
  (addresses are few enough to try them all), and it does not outlive its day. The price:
  cookieless clients behind one address share one vote per record and day, which browsers
  never do (they keep cookies, or could not post the forms at all).

Refusing cookieless votes outright was the other choice; it would break the API's contract
(a bare ``curl`` vote answers 201) for no privacy gain, since nothing of the address is
kept past the day either way.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import date

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from kb.http import client_address
from kb.loop.models import RecordTally, Vote, VoterSalt
from kb.records.models import ErrorRecord

__all__ = [
    "VOTER_COOKIE",
    "cast_vote",
    "day_salt",
    "recount",
    "set_voter_cookie",
    "voter_id",
]

VOTER_COOKIE = "kb_voter"
_VOTER_SALT = "kb.loop.voter"
# A returning browser stays the same voter across visits; the stored voter changes daily.
VOTER_COOKIE_AGE = 365 * 24 * 3600
# The verdicts a tally counts, each its own column ("complaints" sums the last two).
_COLUMNS = {
    Vote.Verdict.FIXED: "fixed",
    Vote.Verdict.NOT_FIXED: "not_fixed",
    Vote.Verdict.WRONG_MATCH: "wrong_match",
}
COMPLAINTS = (Vote.Verdict.NOT_FIXED, Vote.Verdict.WRONG_MATCH)


def _digest(key: str, value: str) -> str:
    return hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()


def day_salt(day: date) -> str:
    """The salt of ``day`` (made by the first vote of the day, shared by every worker);
    the salts of earlier days are deleted here, so none outlives its day by more than the
    time to the next cookieless vote (and `kb.loop.retention.purge` deletes them too)."""
    found = VoterSalt.objects.filter(day=day).values_list("salt", flat=True).first()
    if found:
        return found
    VoterSalt.objects.filter(day__lt=day).delete()
    try:
        with transaction.atomic():
            return VoterSalt.objects.create(day=day, salt=secrets.token_hex(32)).salt
    except IntegrityError:  # another worker made today's salt first: use theirs
        return VoterSalt.objects.get(day=day).salt


def voter_id(request: HttpRequest, *, today: date | None = None) -> tuple[str, str | None]:
    """The stored voter for this client today (see the module docstring), and the id to
    set with `set_voter_cookie` when a browser had none yet."""
    day = (today or timezone.localdate()).isoformat()
    browser = request.get_signed_cookie(VOTER_COOKIE, default=None, salt=_VOTER_SALT)
    new = None
    if not browser:
        csrf = request.COOKIES.get(settings.CSRF_COOKIE_NAME, "")
        if not csrf:
            return _digest(day_salt(date.fromisoformat(day)), client_address(request)), None
        browser = new = _digest(settings.SECRET_KEY, f"{_VOTER_SALT}:{csrf}")[:32]
    return _digest(settings.SECRET_KEY, f"{browser}:{day}"), new


def set_voter_cookie(response: HttpResponse, value: str) -> None:
    response.set_signed_cookie(
        VOTER_COOKIE,
        value,
        salt=_VOTER_SALT,
        max_age=VOTER_COOKIE_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def _tally(record_id: str, verdict: str, by: int) -> None:
    """Add ``by`` to the record's count of ``verdict`` (creating its tally when needed)."""
    column = _COLUMNS[Vote.Verdict(verdict)]
    change = {column: F(column) + by}
    if verdict in COMPLAINTS:
        change["complaints"] = F("complaints") + by
    if not RecordTally.objects.filter(record_id=record_id).update(**change):
        RecordTally.objects.get_or_create(record_id=record_id)
        RecordTally.objects.filter(record_id=record_id).update(**change)


def cast_vote(
    *,
    record: ErrorRecord,
    verdict: str,
    voter: str,
    step: int | None = None,
    today: date | None = None,
) -> bool:
    """Count ``voter``'s verdict; False when they voted the same way today already (a
    different verdict replaces theirs). Raises ``ValidationError`` for an unknown verdict
    or a step the record does not have."""
    if verdict not in Vote.Verdict.values:
        raise ValidationError(f"Unknown verdict {verdict!r}.")
    if step is not None and not 1 <= step <= len(record.solutions or []):
        raise ValidationError(f"This record has no solution step {step}.")
    day = today or timezone.localdate()
    try:
        with transaction.atomic():
            vote = Vote.objects.filter(voter=voter, record=record, step=step, day=day).first()
            if vote is None:
                Vote.objects.create(record=record, verdict=verdict, step=step, day=day, voter=voter)
                if step is None:
                    _tally(record.pk, verdict, 1)
                return True
            if vote.verdict == verdict:
                return False
            if step is None:
                _tally(record.pk, vote.verdict, -1)
                _tally(record.pk, verdict, 1)
            vote.verdict = verdict
            vote.save(update_fields=["verdict"])
            return True
    except IntegrityError:  # the same voter's concurrent vote landed first
        return False


def recount(record_ids: Iterable[str] | None = None) -> int:
    """Rebuild the tallies of ``record_ids`` (every record's when ``None``) from the vote
    rows, for when votes were deleted in bulk; returns the number of tallies written."""
    votes = Vote.objects.filter(step__isnull=True)
    tallies = RecordTally.objects.all()
    if record_ids is not None:
        ids = list(record_ids)
        votes, tallies = votes.filter(record_id__in=ids), tallies.filter(record_id__in=ids)
    counts: dict[str, RecordTally] = {}
    for row in votes.values("record_id", "verdict").annotate(n=Count("id")).order_by():
        tally = counts.setdefault(row["record_id"], RecordTally(record_id=row["record_id"]))
        setattr(tally, _COLUMNS[Vote.Verdict(row["verdict"])], row["n"])
    for tally in counts.values():
        tally.complaints = tally.not_fixed + tally.wrong_match
    with transaction.atomic():
        tallies.delete()
        RecordTally.objects.bulk_create(counts.values(), batch_size=2000)
    return len(counts)
