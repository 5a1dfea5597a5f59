"""Drafts are curators' work in progress: one rule (`kb.records.access.is_curator`, through
``ErrorRecord.objects.visible_to``) decides who reads a draft's page and JSON twin, and who
may vote or propose on it. A staff account without the curator permission is the public
here: a 404 everywhere, and nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from kb.loop.models import Proposal, Vote
from kb.records.access import is_curator
from kb.records.models import ErrorRecord, Status
from tests.curation_support import make_curator
from tests.factories import make_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft() -> ErrorRecord:
    record = make_record(solutions=["one", "two"])
    ErrorRecord.objects.filter(pk=record.pk).update(status=Status.DRAFT)
    return record


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def attempts(client: Client, record: ErrorRecord) -> dict[str, Any]:
    """Every way to read or act on ``record``, each with the status it answered."""
    api = {"content_type": "application/json"}
    proposal = {"record_id": record.pk, "field": "solutions", "text": "Restart the widget"}
    return {
        "page": client.get(reverse("record_detail", args=[record.pk])).status_code,
        "json": client.get(f"/api/records/{record.pk}").status_code,
        "api vote": client.post(
            "/api/feedback", {"record_id": record.pk, "verdict": "fixed"}, **api
        ).status_code,
        "api step vote": client.post(
            "/api/feedback", {"record_id": record.pk, "verdict": "fixed", "step": 1}, **api
        ).status_code,
        "api proposal": client.post("/api/proposals", proposal, **api).status_code,
        "form vote": client.post(
            reverse("loop:feedback"), {"record_id": record.pk, "verdict": "fixed"}
        ).status_code,
        "form proposal": client.post(
            reverse("loop:propose", args=[record.pk]), {"field": "solutions", "text": "Retry"}
        ).status_code,
    }


def test_staff_without_the_curator_permission_see_a_draft_as_the_public_do(
    draft: ErrorRecord,
) -> None:
    staff = User.objects.create_user("helpdesk", is_staff=True)
    assert not is_curator(staff)
    refused = attempts(logged_in(staff), draft)
    assert refused == dict.fromkeys(refused, 404)
    assert attempts(Client(), draft) == refused
    assert not Vote.objects.exists()
    assert not Proposal.objects.exists()


def test_a_curator_reads_a_draft_and_may_vote_and_propose_on_it(draft: ErrorRecord) -> None:
    answered = attempts(logged_in(make_curator()), draft)
    assert answered == {
        "page": 200,
        "json": 200,
        "api vote": 201,
        "api step vote": 201,
        "api proposal": 201,
        "form vote": 200,  # the same client voted "fixed" through the API just before
        "form proposal": 201,
    }
    assert Vote.objects.filter(record=draft).count() == 2
    assert Proposal.objects.filter(record=draft).count() == 2


def test_the_one_rule_is_the_curator_permission_not_the_staff_flag() -> None:
    plain = User.objects.create_user("someone")
    staff = User.objects.create_user("staff", is_staff=True)
    inactive = make_curator("gone")
    inactive.is_active = False
    inactive.save()
    root = User.objects.create_superuser("root")
    assert [is_curator(u) for u in (None, plain, staff, inactive)] == [False] * 4
    assert is_curator(make_curator())
    assert is_curator(root)
    published, draft = make_record(), make_record()
    ErrorRecord.objects.filter(pk=draft.pk).update(status=Status.DRAFT)
    for user in (None, plain, staff, inactive):
        assert set(ErrorRecord.objects.visible_to(user).values_list("pk", flat=True)) == {
            published.pk
        }
    assert ErrorRecord.objects.visible_to(root).count() == 2
