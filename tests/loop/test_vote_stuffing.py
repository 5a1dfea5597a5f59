"""Votes that cannot be stuffed (`kb.loop.votes`): the voter id is issued and signed by the
server, never taken from a cookie the client makes up; one address counts at most
``KB_VOTERS_PER_ADDRESS`` voters per record and day whatever ids it holds; and the steps'
order moves only once distinct voters, counted by address and day, reach
``KB_VOTE_THRESHOLD``. Each test is an attack the probe ran, or the genuine voter it must
not stop."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from django.core import signing
from django.test import Client
from django.urls import reverse

from kb.loop.models import RecordTally, Vote
from kb.loop.votes import VOTER_COOKIE
from kb.records.models import ErrorRecord
from tests.factories import make_record

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.66"


@pytest.fixture(autouse=True)
def _generous_rate_limit(settings: Any) -> None:
    """The rate limit is not what is tested here: every request must reach the vote."""
    settings.KB_RATE_LIMIT_PER_MINUTE = 1_000_000


@pytest.fixture
def record() -> ErrorRecord:
    return make_record(solutions=["Check the config", "Restart the worker", "Rebuild the index"])


def api_vote(client: Client, record: ErrorRecord, verdict: str, step: int | None = None) -> Any:
    body: dict[str, Any] = {"record_id": record.pk, "verdict": verdict}
    if step is not None:
        body["step"] = step
    return client.post("/api/feedback", body, content_type="application/json")


def browser(address: str, record: ErrorRecord) -> Client:
    """A browser that opened the record page from ``address``, as a person does first."""
    client = Client(REMOTE_ADDR=address)
    assert client.get(reverse("record_detail", args=[record.pk])).status_code == 200
    return client


def wrong_matches(record: ErrorRecord) -> int:
    tally = RecordTally.objects.filter(record=record).first()
    return tally.wrong_match if tally else 0


def steps_shown(client: Client, record: ErrorRecord) -> list[int]:
    html = client.get(reverse("record_detail", args=[record.pk])).content.decode()
    return [int(p.split('"')[0]) for p in html.split('class="step-vote" data-step="')[1:]]


def test_made_up_cookies_from_one_address_count_once(record: ErrorRecord) -> None:
    statuses = []
    for _ in range(200):
        client = Client(REMOTE_ADDR=ATTACKER)
        client.cookies["csrftoken"] = secrets.token_hex(16)
        client.cookies[VOTER_COOKIE] = secrets.token_urlsafe(16)
        statuses.append(api_vote(client, record, "wrong_match").status_code)
    assert statuses.count(201) == 1
    assert statuses.count(200) == 199
    assert wrong_matches(record) == 1


def test_a_self_made_cookie_and_token_pair_on_the_form_counts_once(record: ErrorRecord) -> None:
    counted = 0
    for _ in range(20):
        client = Client(enforce_csrf_checks=True, REMOTE_ADDR=ATTACKER)
        token = secrets.token_hex(16)  # 32 characters: a CSRF secret Django accepts
        client.cookies["csrftoken"] = token
        data = {"record_id": record.pk, "verdict": "wrong_match", "csrfmiddlewaretoken": token}
        response = client.post(reverse("loop:feedback"), data)
        assert response.status_code in (200, 201)  # the pair passes CSRF: the vote is read
        counted += response.status_code == 201
    assert counted == 1
    assert wrong_matches(record) == 1


def forged(value: str, *, key: str, salt: str) -> str:
    """``value`` signed as Django signs a cookie (``set_signed_cookie``), with ``key``."""
    return signing.TimestampSigner(key=key, salt=VOTER_COOKIE + salt).sign(value)


@pytest.mark.parametrize(
    ("key", "salt"),
    [
        ("not-this-sites-secret-key", "kb.loop.voter.issued"),  # a made-up key
        (None, "kb.loop.voter"),  # the real key, under the salt ids derived from CSRF had
        (None, "some.other.salt"),  # the real key, as another part of the site signs
    ],
    ids=["other-key", "retired-salt", "other-salt"],
)
def test_a_forged_signed_voter_cookie_counts_as_no_id(
    record: ErrorRecord, settings: Any, key: str | None, salt: str
) -> None:
    counted = 0
    for n in range(10):
        client = Client(REMOTE_ADDR=ATTACKER)
        client.cookies["csrftoken"] = secrets.token_hex(16)
        client.cookies[VOTER_COOKIE] = forged(f"id-{n}", key=key or settings.SECRET_KEY, salt=salt)
        counted += api_vote(client, record, "wrong_match").status_code == 201
    assert counted == 1  # every one of them is the address, counted once
    assert Vote.objects.filter(record=record).values("voter").distinct().count() == 1


def test_ids_collected_from_page_views_count_up_to_the_cap_per_address(
    record: ErrorRecord, settings: Any
) -> None:
    settings.KB_VOTERS_PER_ADDRESS = 3
    clients = [browser(ATTACKER, record) for _ in range(20)]
    assert len({c.cookies[VOTER_COOKIE].value for c in clients}) == 20  # 20 genuine ids
    answers = [api_vote(c, record, "wrong_match") for c in clients]
    assert [a.status_code for a in answers] == [201] * 3 + [200] * 17
    assert answers[-1].json() == {
        "record_id": record.pk,
        "verdict": "wrong_match",
        "step": None,
        "counted": False,
        "capped": True,
    }
    assert wrong_matches(record) == 3
    # The form answers a capped vote the same way, and says why.
    form = clients[10].post(
        reverse("loop:feedback"), {"record_id": record.pk, "verdict": "not_fixed"}
    )
    assert form.status_code == 200
    assert "enough votes from your network" in form.content.decode()
    # A voter already counted is not capped: they may change their mind, or rate a step.
    assert api_vote(clients[0], record, "fixed").status_code == 201
    assert api_vote(clients[1], record, "fixed", step=2).status_code == 201
    assert Vote.objects.filter(record=record).values("voter").distinct().count() == 3
    # The cap is per record and per address: another record, another address, still count.
    other = make_record()
    assert api_vote(clients[19], other, "wrong_match").status_code == 201
    assert api_vote(browser("198.51.100.9", record), record, "wrong_match").status_code == 201


def test_step_votes_from_one_address_cannot_reorder_the_steps(
    record: ErrorRecord, settings: Any
) -> None:
    settings.KB_VOTE_THRESHOLD = 5
    settings.KB_VOTERS_PER_ADDRESS = 100  # not the cap: the threshold alone holds the order
    reader = Client(REMOTE_ADDR="192.0.2.1")
    for _ in range(12):
        voter = browser(ATTACKER, record)
        assert api_vote(voter, record, "fixed", step=3).status_code == 201
    assert Vote.objects.filter(record=record, step=3).count() == 12
    assert steps_shown(reader, record) == [1, 2, 3]
    for n in range(4):  # four more people, each from their own address: five in all
        voter = browser(f"198.51.100.{n + 1}", record)
        assert api_vote(voter, record, "fixed", step=3).status_code == 201
    assert steps_shown(reader, record) == [3, 1, 2]


def test_a_genuine_second_voter_from_another_address_counts(record: ErrorRecord) -> None:
    first, second = browser("198.51.100.1", record), browser("198.51.100.2", record)
    ids = {first.cookies[VOTER_COOKIE].value, second.cookies[VOTER_COOKIE].value}
    assert len(ids) == 2  # each page view without an id gave one, signed by the server
    assert api_vote(first, record, "wrong_match").status_code == 201
    assert api_vote(second, record, "wrong_match").status_code == 201
    assert api_vote(second, record, "wrong_match").status_code == 200
    assert wrong_matches(record) == 2
    # A page view with a valid id keeps it: the same browser, the same voter.
    again = second.get(reverse("record_detail", args=[record.pk]))
    assert VOTER_COOKIE not in again.cookies


def test_the_paste_pages_vote_forms_issue_an_id_too(record: ErrorRecord) -> None:
    client = Client(REMOTE_ADDR="198.51.100.3")
    line = "ERROR Backfill progress for vnode 17 not found, backfill_state not initialized properly"
    hit = client.post(reverse("match"), {"text": line}, headers={"HX-Request": "true"})
    assert f'name="record_id" value="{record.pk}"' in hit.content.decode()
    assert VOTER_COOKIE in hit.cookies
    assert hit.cookies[VOTER_COOKIE]["httponly"]
    assert api_vote(client, record, "fixed").status_code == 201
    assert Vote.objects.get().voter != Vote.objects.get().source  # counted as the id


def test_addresses_of_one_ipv6_64_are_one_address(record: ErrorRecord, settings: Any) -> None:
    """One subscriber line or host holds a whole /64 and picks addresses from it at will."""
    settings.KB_VOTERS_PER_ADDRESS = 2
    prefix = "2001:db8:aa:bb"
    clients = [browser(f"{prefix}:{n:x}::{n + 1:x}", record) for n in range(6)]
    assert [api_vote(c, record, "wrong_match").status_code for c in clients] == [201] * 2 + [
        200
    ] * 4
    neighbour = browser("2001:db8:aa:cc::1", record)  # the next /64: someone else
    assert api_vote(neighbour, record, "wrong_match").status_code == 201
    mapped = Client(REMOTE_ADDR="::ffff:192.0.2.7")  # an IPv4 client on a dual stack
    plain = Client(REMOTE_ADDR="192.0.2.7")
    assert api_vote(mapped, record, "fixed").status_code == 201
    assert api_vote(plain, record, "fixed").status_code == 200  # the same address
