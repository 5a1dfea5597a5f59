"""Proposals cannot be flooded (docs/reliability.md#r35-costs-and-proposals): the same text
pending on a record is one row, one address has at most ``KB_PROPOSALS_PENDING_PER_ADDRESS``
pending proposals on a record, and the form's honeypot guards the API too."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from kb.loop import services
from kb.loop.models import Proposal
from kb.loop.votes import address_digest
from tests.factories import make_record

pytestmark = pytest.mark.django_db


def propose(client: Client, record_id: str, text: str, **extra: Any) -> Any:
    body = {"record_id": record_id, "field": "solutions", "text": text, **extra}
    return client.post("/api/proposals", body, content_type="application/json")


@pytest.fixture(autouse=True)
def _unlimited(settings: Any) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0  # this is about proposals, not the rate limit
    settings.KB_PROPOSALS_PENDING_PER_ADDRESS = 3


def test_the_same_pending_text_is_answered_as_the_proposal_already_there() -> None:
    record = make_record(solutions=[])
    client = Client()
    first = propose(client, record.pk, "Restart the vnode")
    again = [
        propose(Client(REMOTE_ADDR=f"10.0.0.{n}"), record.pk, " Restart the vnode\r\n")
        for n in range(3)
    ]
    again += [propose(client, record.pk, "Restart the vnode") for _ in range(20)]
    assert first.status_code == 201
    assert {(r.status_code, r.json()["id"]) for r in again} == {(201, first.json()["id"])}
    assert Proposal.objects.count() == 1
    # Another field, another record: other proposals.
    other_field = propose(client, record.pk, "Restart the vnode", field="preventionTips")
    assert other_field.json()["id"] != first.json()["id"]
    assert propose(client, make_record().pk, "Restart the vnode").status_code == 201
    assert Proposal.objects.count() == 3
    # Once decided, the text may be proposed again: a new pending proposal.
    decided = Proposal.objects.get(pk=first.json()["id"])
    services.reject_proposal(proposal=decided, user=User.objects.create_user("curator"))
    anew = propose(client, record.pk, "Restart the vnode")
    assert anew.json()["id"] not in (first.json()["id"], other_field.json()["id"])


def test_one_address_has_at_most_the_cap_pending_on_a_record() -> None:
    record = make_record(solutions=[])
    client = Client()
    statuses = [propose(client, record.pk, f"Step number {n}").status_code for n in range(50)]
    assert statuses == [201] * 3 + [429] * 47
    refused = propose(client, record.pk, "One more")
    assert refused.json()["status"] == 429
    assert "waiting for a curator" in refused.json()["detail"]
    assert Proposal.objects.count() == 3
    # A resend of a pending one is still answered as that proposal.
    assert propose(client, record.pk, "Step number 0").status_code == 201
    # Other addresses and other records are not held back.
    assert propose(Client(REMOTE_ADDR="10.9.9.9"), record.pk, "Mine").status_code == 201
    assert propose(client, make_record().pk, "Elsewhere").status_code == 201
    # A curator's decision frees a place.
    services.reject_proposal(
        proposal=Proposal.objects.filter(record=record).first(),
        user=User.objects.create_user("curator"),
    )
    assert propose(client, record.pk, "Now there is room").status_code == 201
    assert propose(client, record.pk, "But not twice").status_code == 429


def test_the_form_has_the_same_cap(settings: Any) -> None:
    settings.KB_PROPOSALS_PENDING_PER_ADDRESS = 1
    record = make_record(solutions=[])
    client = Client()
    url = f"/records/{record.pk}/propose/"
    assert client.post(url, {"field": "solutions", "text": "First"}).status_code == 201
    refused = client.post(url, {"field": "solutions", "text": "Second"})
    assert refused.status_code == 429
    html = refused.content.decode()
    assert "waiting for a curator" in html
    assert "Second" in html  # the text comes back in the form, nothing lost
    assert Proposal.objects.count() == 1


@pytest.mark.parametrize("value", ["", "https://spam.example", None, 0])
def test_the_api_refuses_a_proposal_carrying_the_honeypot(value: Any) -> None:
    record = make_record(solutions=[])
    response = propose(Client(), record.pk, "Buy cheap things", website=value)
    assert response.status_code == 400
    assert "website" in response.json()["detail"]
    assert not Proposal.objects.exists()


def test_the_api_and_the_form_share_the_honeypot_field() -> None:
    record = make_record(solutions=[])
    page = Client().get(f"/records/{record.pk}/")  # the form is on the record page
    assert f'name="{services.HONEYPOT}"' in page.content.decode()
    filled = Client().post(
        f"/records/{record.pk}/propose/",
        {"field": "solutions", "text": "Spam", services.HONEYPOT: "x"},
    )
    assert filled.status_code == 201  # answered like a stored one, dropped
    assert not Proposal.objects.exists()


def test_the_submitter_is_no_address_and_changes_with_the_day() -> None:
    request = RequestFactory().post("/", REMOTE_ADDR="192.0.2.7")
    today = address_digest(request, today=date(2026, 1, 1))
    assert today == address_digest(request, today=date(2026, 1, 1))
    assert "192.0.2.7" not in today
    other = RequestFactory().post("/", REMOTE_ADDR="192.0.2.8")
    assert address_digest(other, today=date(2026, 1, 1)) != today
    assert address_digest(request, today=date(2026, 1, 2)) != today
    record = make_record(solutions=[])
    propose(Client(REMOTE_ADDR="192.0.2.7"), record.pk, "Restart it")
    assert Proposal.objects.get().submitter == address_digest(request)
