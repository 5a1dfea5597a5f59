"""The learning loop's JSON API (`kb.loop.api`): every shape of the contract, 403 while a
part is turned off, the rate limit and size limit, 401/403 on the gaps, and nothing
pending or unredacted leaking out."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from kb.loop import services
from kb.loop.models import Gap, Proposal, Vote
from kb.records.models import ErrorRecord, Status
from tests.curation_support import make_curator
from tests.factories import make_record

pytestmark = pytest.mark.django_db

PASTE = (
    "INFO booting\n"
    "ERROR Widget frobnication failed for order {n} owned by {email} "
    "via postgres://app:hunter2-{n}@db.internal/orders key AKIAIOSFODNN7EXAMPL{n}\n"
)


def post(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/{path}", body, content_type="application/json")


def paste(n: int, email: str = "jane@example.org") -> str:
    return PASTE.format(n=n, email=email)


def test_a_dry_run_shows_exactly_what_would_be_stored_and_stores_nothing() -> None:
    response = post(Client(), "reports", {"text": paste(1), "dry_run": True})
    assert response.status_code == 200
    data = response.json()
    assert set(data) >= {"redacted", "lines"}
    assert data["redacted"] == "\n".join(data["lines"])
    for secret in ("jane@example.org", "hunter2-1", "AKIAIOSFODNN7EXAMPL1", "booting"):
        assert secret not in response.content.decode()
    assert "Widget frobnication failed" in data["redacted"]
    assert response["Cache-Control"] == "no-store"
    assert not Gap.objects.exists()


def test_reports_of_one_error_get_one_gap_id_and_its_count() -> None:
    client = Client()
    first = post(client, "reports", {"text": paste(1)})
    second = post(client, "reports", {"text": paste(2, "bob@example.com"), "dry_run": False})
    assert (first.status_code, second.status_code) == (201, 201)
    assert set(first.json()) == {"gap_id", "count", "redacted"}
    assert first.json()["gap_id"] == second.json()["gap_id"]
    assert [first.json()["count"], second.json()["count"]] == [1, 2]
    assert "bob@example.com" not in second.json()["redacted"]


def test_a_report_without_an_error_line_stores_nothing(settings: Any) -> None:
    client = Client()
    assert post(client, "reports", {"text": "  \n"}).status_code == 422
    nothing = post(client, "reports", {"text": "ok"})
    assert nothing.status_code == 200
    assert nothing.json()["lines"] == []
    assert not Gap.objects.exists()


def test_an_oversized_report_is_a_413(settings: Any) -> None:
    settings.KB_MAX_PASTE_BYTES = 100
    client = Client()
    too_big = post(client, "reports", {"text": "ERROR x " * 30})
    assert too_big.status_code == 413
    assert too_big.json()["max_bytes"] == 100
    assert post(client, "reports", {"dry_run": True}).status_code == 422


@pytest.mark.parametrize(
    ("setting", "path", "body"),
    [
        ("KB_REPORTS_ENABLED", "reports", {"text": "ERROR widget failed", "dry_run": True}),
        ("KB_FEEDBACK_ENABLED", "feedback", {"record_id": "x", "verdict": "fixed"}),
        (
            "KB_PROPOSALS_ENABLED",
            "proposals",
            {"record_id": "x", "field": "solutions", "text": "t"},
        ),
    ],
)
def test_each_part_answers_403_while_turned_off(
    settings: Any, setting: str, path: str, body: dict[str, Any]
) -> None:
    setattr(settings, setting, False)
    response = post(Client(), path, body)
    assert response.status_code == 403
    assert response.json()["status"] == 403


def test_the_loop_counts_against_the_matching_rate_limit(settings: Any) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 2
    client = Client()
    body = {"text": "ERROR widget failed badly", "dry_run": True}
    assert [post(client, "reports", body).status_code for _ in range(3)] == [200, 200, 429]
    refused = post(client, "feedback", {"record_id": "x", "verdict": "fixed"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1


def test_feedback_counts_once_per_client_record_and_day() -> None:
    record = make_record(solutions=["one", "two"])
    client = Client()  # no cookie: counted by its address, once per record and day
    vote = {"record_id": record.pk, "verdict": "fixed"}
    first = post(client, "feedback", vote)
    assert first.status_code == 201
    assert first.json() == {
        "record_id": record.pk,
        "verdict": "fixed",
        "step": None,
        "counted": True,
        "capped": False,
    }
    assert "kb_voter" not in first.cookies  # a vote issues no id: it counted as the address
    again = post(client, "feedback", vote)
    assert again.status_code == 200
    assert again.json()["counted"] is False
    assert post(Client(), "feedback", vote).status_code == 200  # cookieless, same address
    assert post(client, "feedback", {**vote, "step": 2}).status_code == 201
    assert post(Client(REMOTE_ADDR="10.1.2.3"), "feedback", vote).status_code == 201
    browser = Client()  # a browser: the record page gave it a voter id, its own voter
    assert browser.get(f"/records/{record.pk}/").status_code == 200
    assert "kb_voter" in browser.cookies
    assert post(browser, "feedback", vote).status_code == 201
    assert Vote.objects.count() == 4
    assert post(client, "feedback", {**vote, "verdict": "wrong_match"}).status_code == 201
    assert Vote.objects.filter(verdict="wrong_match").count() == 1


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"record_id": "nope"}, 404),
        ({"verdict": "meh"}, 422),
        ({"step": 0}, 422),
        ({"step": "1"}, 422),
        ({"step": 3}, 404),
    ],
)
def test_feedback_refuses_what_it_cannot_count(change: dict[str, Any], status: int) -> None:
    record = make_record(solutions=["one", "two"])
    body = {"record_id": record.pk, "verdict": "fixed", **change}
    assert post(Client(), "feedback", body).status_code == status
    assert not Vote.objects.exists()


def test_a_draft_record_takes_no_feedback_or_proposals_from_the_public() -> None:
    record = make_record()
    ErrorRecord.objects.filter(pk=record.pk).update(status=Status.DRAFT)
    client = Client()
    assert post(client, "feedback", {"record_id": record.pk, "verdict": "fixed"}).status_code == 404
    body = {"record_id": record.pk, "field": "solutions", "text": "x"}
    assert post(client, "proposals", body).status_code == 404


def test_a_proposal_is_pending_and_shows_on_no_public_answer() -> None:
    record = make_record(solutions=[])
    client = Client()
    body = {"record_id": record.pk, "field": "solutions", "text": "Reinitialise <b>the</b> vnode"}
    response = post(client, "proposals", body)
    assert response.status_code == 201
    proposal = Proposal.objects.get()
    assert response.json() == {"id": proposal.pk, "status": "pending"}
    shown = client.get(f"/api/records/{record.pk}").content.decode()
    assert "Reinitialise" not in shown
    assert "Reinitialise" not in client.get(f"/records/{record.pk}/").content.decode()


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"field": "exampleFix"}, 422),
        ({"text": "   "}, 422),
        ({"text": "x" * 4001}, 422),
        ({"text": "\x00\x00"}, 422),
        ({"record_id": "nope"}, 404),
    ],
)
def test_a_proposal_refuses_what_it_cannot_keep(change: dict[str, Any], status: int) -> None:
    record = make_record()
    body = {"record_id": record.pk, "field": "solutions", "text": "Restart it", **change}
    assert post(Client(), "proposals", body).status_code == status
    assert not Proposal.objects.exists()


def test_gaps_are_for_curators_and_superusers_only() -> None:
    post(Client(), "reports", {"text": paste(1)})
    assert Client().get("/api/gaps").status_code == 401
    someone = Client()
    someone.force_login(User.objects.create_user("someone"))
    assert someone.get("/api/gaps").status_code == 403
    staff = Client()
    staff.force_login(User.objects.create_user("staff", is_staff=True))
    assert staff.get("/api/gaps").status_code == 403
    for user in (make_curator(), User.objects.create_superuser("root")):
        client = Client()
        client.force_login(user)
        assert client.get("/api/gaps").status_code == 200


def test_gaps_have_the_contracts_shape_highest_count_first() -> None:
    record = make_record()
    for n in (1, 2):
        post(Client(), "reports", {"text": paste(n)})
    post(Client(), "reports", {"text": "ERROR Backfill progress for vnode not found, state not ok"})
    client = Client()
    client.force_login(make_curator())
    response = client.get("/api/gaps")
    gaps = response.json()["gaps"]
    assert [g["count"] for g in gaps] == [2, 1]
    top = gaps[0]
    assert set(top) == {
        "id", "template", "count", "first_seen", "last_seen", "samples", "nearest", "closed_by",
    }  # fmt: skip
    assert top["id"] == str(Gap.objects.order_by("-count").first().pk)
    assert top["closed_by"] is None
    assert len(top["samples"]) == 2
    assert "jane@example.org" not in response.content.decode()
    nearest = gaps[1]["nearest"]
    assert nearest[0]["record_id"] == record.pk
    assert set(nearest[0]) == {"record_id", "similarity"}
    Gap.objects.filter(pk=gaps[1]["id"]).update(closed_by=record, closed_at=timezone.now())
    closed = client.get("/api/gaps?state=closed").json()["gaps"]
    assert [g["closed_by"] for g in closed] == [record.pk]
    assert len(client.get("/api/gaps?limit=1").json()["gaps"]) == 1


def test_the_loop_is_in_the_openapi_schema() -> None:
    paths = Client().get("/api/openapi.json").json()["paths"]
    for path in ("/api/reports", "/api/feedback", "/api/proposals", "/api/gaps"):
        assert path in paths
    assert {"200", "201", "403"} <= set(paths["/api/reports"]["post"]["responses"])


def test_text_that_is_not_unicode_is_refused_clearly_not_a_500() -> None:
    """A JSON body may carry a lone surrogate (``"\\ud800"``), which neither database can
    store: the API refuses it as invalid input."""
    record = make_record(solutions=[])
    client = Client()
    raw = '{"text": "ERROR Widget frobnication failed \\ud800 for order 12 today"}'
    response = client.post("/api/reports", raw, content_type="application/json")
    assert response.status_code == 422
    raw = '{"record_id": "RID", "field": "solutions", "text": "Restart \\ud800 the node"}'
    response = client.post(
        "/api/proposals", raw.replace("RID", record.pk), content_type="application/json"
    )
    assert response.status_code == 422
    assert not Proposal.objects.exists()


def test_the_services_store_text_that_is_not_unicode_with_a_replacement() -> None:
    record = make_record(solutions=[])
    proposal = services.propose(record=record, field="solutions", text="Restart \ud800 it")
    assert proposal.text == "Restart ? it"
    preview = services.preview_report(text="ValueError: bad \ud800 value in the batch")
    assert preview.lines == ["ValueError: bad ? value in the batch"]
