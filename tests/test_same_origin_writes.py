"""API writes are same-origin JSON only (docs/reliability.md#r33-same-origin-writes).

A browser sends ``text/plain`` and form bodies to another origin without a preflight, and
says where a request comes from (``Origin``, ``Sec-Fetch-Site``): the JSON write endpoints
take ``application/json`` only and refuse a browser of another origin; clients that are not
browsers (no such headers) are served as before, and ``POST /api/match``, a read, keeps
taking ``text/plain`` and forms from anywhere (the contract). The real-browser proof is
``tests/browser/test_cross_origin.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, RequestFactory

from kb.api import from_other_origin
from kb.loop.models import Gap, Proposal, Vote
from tests.factories import make_record

SITE = "http://testserver"  # the test client's host


@pytest.mark.parametrize(
    ("headers", "other"),
    [
        ({}, False),  # curl, CI, a script: not a browser
        ({"Sec-Fetch-Site": "same-origin"}, False),
        ({"Sec-Fetch-Site": "none"}, False),  # typed or bookmarked by the person
        ({"Sec-Fetch-Site": "cross-site"}, True),
        ({"Sec-Fetch-Site": "same-site"}, True),  # another port or subdomain
        ({"Sec-Fetch-Site": "Cross-Site "}, True),
        ({"Origin": SITE}, False),
        ({"Origin": SITE, "Sec-Fetch-Site": "same-origin"}, False),
        ({"Origin": "https://testserver"}, True),  # another scheme is another origin
        ({"Origin": "http://testserver:8001"}, True),  # another port too
        ({"Origin": "http://evil.example"}, True),
        ({"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, True),
        ({"Origin": "null"}, True),  # a sandboxed frame or a data: page
        ({"Origin": ""}, True),
        ({"Origin": "http://trusted.example"}, False),  # CSRF_TRUSTED_ORIGINS
        ({"Origin": "http://app.corp.example"}, False),  # a trusted wildcard
        ({"Origin": "http://corp.example.evil"}, True),
    ],
)
def test_which_requests_come_from_another_origin(
    settings: Any, headers: dict[str, str], other: bool
) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["http://trusted.example", "http://*.corp.example"]
    request = RequestFactory().post("/api/reports", headers=headers)
    assert from_other_origin(request) is other


def post(client: Client, path: str, body: Any, content_type: str, **headers: str) -> Any:
    return client.post(path, body, content_type=content_type, headers=headers)


def write_bodies() -> list[tuple[str, dict[str, Any]]]:
    record = make_record(solutions=["one"])
    return [
        ("/api/reports", {"text": "ERROR Widget frobnication failed for order 7"}),
        ("/api/feedback", {"record_id": record.pk, "verdict": "wrong_match"}),
        ("/api/proposals", {"record_id": record.pk, "field": "solutions", "text": "Restart"}),
    ]


def nothing_stored() -> bool:
    return not (Gap.objects.exists() or Proposal.objects.exists() or Vote.objects.exists())


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", ""],
)
def test_writes_take_json_only(content_type: str) -> None:
    """The bodies a page of another site can send without a preflight: each a 415, even
    when it holds valid JSON (what a ``text/plain`` fetch or form smuggles)."""
    client = Client()
    for path, body in write_bodies():
        response = post(client, path, json.dumps(body), content_type)
        assert response.status_code == 415, (path, response.content)
        data = response.json()
        assert data["status"] == 415
        assert "application/json" in data["detail"]
    assert nothing_stored()
    # The same bodies as JSON: served.
    for path, body in write_bodies():
        assert post(client, path, body, "application/json; charset=utf-8").status_code == 201


@pytest.mark.django_db
def test_a_multipart_form_write_is_refused() -> None:
    client = Client()
    for path, body in write_bodies():
        response = client.post(path, body)  # multipart/form-data, the test client's default
        assert response.status_code == 415, path
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "null"},
    ],
)
def test_writes_from_a_browser_of_another_origin_are_refused(headers: dict[str, str]) -> None:
    """Even as ``application/json`` (a page could only send that after a preflight, which
    the API does not grant; a browser extension or a bug could)."""
    client = Client()
    for path, body in write_bodies():
        response = post(client, path, body, "application/json", **headers)
        assert response.status_code == 403, (path, response.content)
        assert response.json()["error"] == "Cross-site request refused"
    assert nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "headers",
    [{}, {"Origin": SITE, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}],
)
def test_json_writes_from_the_site_or_a_tool_are_served_and_others_refused(
    headers: dict[str, str],
) -> None:
    client = Client()
    other = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    for path, body in write_bodies():
        assert post(client, path, body, "application/json", **other).status_code == 403
        assert post(client, path, body, "application/json", **headers).status_code == 201
    assert Gap.objects.count() == Proposal.objects.count() == Vote.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", "ERROR Widget frobnication failed"),
        ("application/json", {"text": "ERROR Widget frobnication failed"}),
        ("application/x-www-form-urlencoded", "text=ERROR+Widget+frobnication+failed"),
    ],
)
def test_match_is_a_read_open_to_every_origin_and_its_body_types(
    content_type: str, body: Any
) -> None:
    """The contract: ``POST /api/match`` takes JSON or ``text/plain`` (and a form field),
    from a browser of another origin too, while a write from there is refused."""
    client = Client()
    other = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    for headers in ({}, other):
        response = post(client, "/api/match", body, content_type, **headers)
        assert response.status_code == 200, response.content
        assert set(response.json()) >= {"matches", "suggestions"}
    assert post(client, "/api/reports", body, content_type, **other).status_code == 403


@pytest.mark.django_db
def test_reads_are_open_to_every_origin() -> None:
    record = make_record()
    client = Client()
    other = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    assert client.get(f"/api/records/{record.pk}", headers=other).status_code == 200
    assert client.get("/api/gaps", headers=other).status_code == 401  # its own rule
    assert post(client, "/api/feedback", {}, "application/json", **other).status_code == 403


@pytest.mark.django_db
def test_the_refusals_are_in_the_openapi_schema() -> None:
    paths = Client().get("/api/openapi.json").json()["paths"]
    for path in ("/api/reports", "/api/feedback", "/api/proposals"):
        assert {"403", "415"} <= set(paths[path]["post"]["responses"]), path
