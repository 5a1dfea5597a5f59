"""Feedback votes: who counts as the same voter, casting a vote, and each record's tally.

The one rule: a vote counts once per voter, record, step and day; a different verdict the
same day replaces the earlier one. Every vote goes through `cast_vote`, which keeps the
record's `RecordTally` in the same transaction, so the work queue's "most complaints"
reads an indexed column and never aggregates the votes. Only record-level votes reach
the tally: a vote on a solution step is about that step (it orders the steps).

Who "the same voter" is (`voter_id`), stored as a digest that changes every day:

- a browser: an HMAC of its voter id and the day under ``SECRET_KEY``. The id is made and
  signed by the server (``kb_voter``, `django.core.signing` under its own salt) when a page
  shows a vote form (`issue_voter_id`, the ``{% voter_form_id %}`` tag, set on the response
  by `VoterCookieMiddleware`), the way the CSRF cookie is. It is never derived from
  anything the client sends: a cookie with a bad or missing signature counts as no id.
  Never the CSRF cookie either: a client makes that up at will, with a matching form
  token, so each made-up cookie would be a new voter.
- a client without a valid id (a script calling ``POST /api/feedback``, a browser that
  dropped its cookie): an HMAC of its address under that day's random salt (`VoterSalt`),
  deleted once the day is over. Such a client votes once per record and day. No address
  is stored: the salt is what would let anyone find the address again from the digest
  (addresses are few enough to try them all), and it does not outlive its day. A vote
  without an id is not given one: it was counted as the address, and a fresh id would
  count the same client a second time on its next vote.

Ids are free to collect (each page view without one makes one), so an id alone does not
bound anything: every vote also stores its **source**, the address's digest of the day
(the same HMAC as above; an IPv6 address counts as its /64, which one line or host holds
whole), and `cast_vote` counts at most ``KB_VOTERS_PER_ADDRESS``
voters from one source per record and day, whatever ids they carry. A voter already
counted there may still change their verdict or vote on the steps. The steps' order
(`kb.loop.selectors.step_order`) counts distinct sources, not ids, against its threshold,
so one address moves it by one voter a day however many ids it holds.

Refusing votes without an id outright was the other choice; it would break the API's
contract (a bare ``curl`` vote answers 201) for no gain, since the cap per address bounds
such clients exactly as it bounds browsers.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Callable, Iterable
from datetime import date
from typing import NamedTuple

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
    "AddressCapReached",
    "Voter",
    "VoterCookieMiddleware",
    "address_digest",
    "cast_vote",
    "day_salt",
    "issue_voter_id",
    "recount",
    "set_voter_cookie",
    "voter_id",
]

VOTER_COOKIE = "kb_voter"
# The signing salt of the ids this server issues, its own so that no other value the
# site signs passes for an id, and not the salt of the ids once derived from CSRF cookies
# (which clients made up), so that none of those verifies.
_VOTER_SALT = "kb.loop.voter.issued"
# A returning browser stays the same voter across visits; the stored voter changes daily.
VOTER_COOKIE_AGE = 365 * 24 * 3600
# Where a page's request keeps the id it issued, for `VoterCookieMiddleware` to set.
_ISSUED = "kb.loop.voter_issued"
# The verdicts a tally counts, each its own column ("complaints" sums the last two).
_COLUMNS = {
    Vote.Verdict.FIXED: "fixed",
    Vote.Verdict.NOT_FIXED: "not_fixed",
    Vote.Verdict.WRONG_MATCH: "wrong_match",
}
COMPLAINTS = (Vote.Verdict.NOT_FIXED, Vote.Verdict.WRONG_MATCH)


class Voter(NamedTuple):
    """Who a vote is from, as stored: the voter (once per record, step and day) and the
    address's digest of the day (capped per record and day)."""

    id: str
    source: str


class AddressCapReached(Exception):
    """The vote's address already counted ``KB_VOTERS_PER_ADDRESS`` voters for the record
    today; nothing was stored."""


def _digest(key: str, value: str) -> str:
    return hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()


def day_salt(day: date) -> str:
    """The salt of ``day`` (made by the first vote of the day, shared by every worker);
    the salts of earlier days are deleted here, so none outlives its day by more than the
    time to the next vote (and `kb.loop.retention.purge` deletes them too)."""
    found = VoterSalt.objects.filter(day=day).values_list("salt", flat=True).first()
    if found:
        return found
    VoterSalt.objects.filter(day__lt=day).delete()
    try:
        with transaction.atomic():
            return VoterSalt.objects.create(day=day, salt=secrets.token_hex(32)).salt
    except IntegrityError:  # another worker made today's salt first: use theirs
        return VoterSalt.objects.get(day=day).salt


def _issued_id(request: HttpRequest) -> str | None:
    """The voter id this server signed for the browser, or ``None`` (none sent, a bad
    signature, expired, or a cookie signed under an earlier salt)."""
    value = request.get_signed_cookie(
        VOTER_COOKIE, default=None, salt=_VOTER_SALT, max_age=VOTER_COOKIE_AGE
    )
    return value or None


def _household(address: str) -> str:
    """What one client's address is, for counting: an IPv6 address's /64 (one subscriber
    line or host gets a whole /64 and picks addresses in it at will), an IPv4 address (or
    one mapped into IPv6) as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # "unknown", or whatever a misconfigured proxy passed on
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


def address_digest(request: HttpRequest, *, today: date | None = None) -> str:
    """The client's address as the day's digest (an IPv6 address as its /64): what a vote's
    source and a proposal's submitter store, so that a cap per address can be counted with
    no address kept, and none found again once the day's salt is deleted."""
    day = today or timezone.localdate()
    return _digest(day_salt(day), _household(client_address(request)))


def voter_id(request: HttpRequest, *, today: date | None = None) -> Voter:
    """The stored voter and source of this request's vote today (the module docstring)."""
    day = today or timezone.localdate()
    source = address_digest(request, today=day)
    browser = _issued_id(request)
    if browser is None:
        return Voter(id=source, source=source)
    return Voter(id=_digest(settings.SECRET_KEY, f"{browser}:{day.isoformat()}"), source=source)


def issue_voter_id(request: HttpRequest) -> None:
    """Give this browser a voter id with the response, unless it has a valid one: called
    where a page renders a vote form (the ``{% voter_form_id %}`` tag)."""
    if _ISSUED not in request.META and _issued_id(request) is None:
        request.META[_ISSUED] = secrets.token_urlsafe(24)


class VoterCookieMiddleware:
    """Sets the voter id a page issued (`issue_voter_id`) as a signed, HTTP-only cookie.

    Why a middleware: the id is issued while a template renders the form, which cannot
    reach the response; Django's CSRF cookie is set the same way."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        issued = request.META.get(_ISSUED)
        if issued and VOTER_COOKIE not in response.cookies:
            set_voter_cookie(response, issued)
        return response


def set_voter_cookie(response: HttpResponse, value: str) -> None:
    """Set ``value`` as the browser's voter id: signed, HTTP-only, a year long."""
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


def _over_cap(record: ErrorRecord, voter: str, source: str, day: date) -> bool:
    """Whether ``voter`` would be one voter too many from ``source`` on ``record`` today.
    A voter already counted there is never refused (a changed verdict, a step vote)."""
    today = Vote.objects.filter(record=record, day=day)
    if today.filter(voter=voter).exists():
        return False
    others = today.filter(source=source).values("voter").distinct().count()
    return others >= settings.KB_VOTERS_PER_ADDRESS


def cast_vote(
    *,
    record: ErrorRecord,
    verdict: str,
    voter: str,
    source: str | None = None,
    step: int | None = None,
    today: date | None = None,
) -> bool:
    """Count ``voter``'s verdict; False when they voted the same way today already (a
    different verdict replaces theirs). ``source`` is the address's digest (`voter_id`);
    without one the voter is their own source (a caller that knows no address).

    Raises ``ValidationError`` for an unknown verdict or a step the record does not have,
    and `AddressCapReached` when ``source`` counted its share of voters today."""
    if verdict not in Vote.Verdict.values:
        raise ValidationError(f"Unknown verdict {verdict!r}.")
    if step is not None and not 1 <= step <= len(record.solutions or []):
        raise ValidationError(f"This record has no solution step {step}.")
    day = today or timezone.localdate()
    source = voter if source is None else source
    try:
        with transaction.atomic():
            vote = Vote.objects.filter(voter=voter, record=record, step=step, day=day).first()
            if vote is None:
                if _over_cap(record, voter, source, day):
                    raise AddressCapReached(record.pk)
                Vote.objects.create(
                    record=record, verdict=verdict, step=step, day=day, voter=voter, source=source
                )
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
