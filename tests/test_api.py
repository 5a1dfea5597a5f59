"""The JSON API: POST /api/match (the shape `manage.py match --json` prints), the browse
twins, and the OpenAPI schema."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from kb.matching.holder import match_text
from kb.records.models import ErrorRecord, Status
from kb.records.services import set_status
from tests.factories import SEED, import_lines, make_line

pytestmark = pytest.mark.django_db

SEED_ID = "c36bebe8cdedec02"
SEED_LINE = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)


@pytest.fixture
def seed() -> None:
    assert import_lines(SEED).rejected == 0


def without_timing(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "elapsed_ms"}


# --- POST /api/match -------------------------------------------------------------------------


@pytest.mark.usefixtures("seed")
def test_match_with_a_json_body_answers_the_contract_object(client: Client) -> None:
    response = client.post("/api/match", {"text": SEED_LINE}, content_type="application/json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    data = response.json()
    assert without_timing(data) == without_timing(match_text(SEED_LINE).as_json())
    first = data["matches"][0]
    assert first["record_id"] == SEED_ID
    assert first["line"] == 1
    start, end = first["span"]
    assert SEED_LINE[start:end] == first["text"]
    assert first["captures"] == ["17"]
    assert set(first) >= {"record_id", "slug", "repo", "line", "span", "text", "captures", "score"}
    assert isinstance(data["suggestions"], list)
    assert isinstance(data["elapsed_ms"], float | int)


@pytest.mark.usefixtures("seed")
def test_match_with_a_plain_text_body_gives_the_same_answer(client: Client) -> None:
    as_json = client.post("/api/match", {"text": SEED_LINE}, content_type="application/json")
    as_text = client.post("/api/match", SEED_LINE, content_type="text/plain; charset=utf-8")
    assert as_text.status_code == 200
    assert without_timing(as_text.json()) == without_timing(as_json.json())


@pytest.mark.usefixtures("seed")
def test_a_paste_with_no_known_error_has_no_matches(client: Client) -> None:
    response = client.post("/api/match", "all good here", content_type="text/plain")
    assert response.status_code == 200
    assert response.json()["matches"] == []


@pytest.mark.usefixtures("seed")
def test_match_results_are_never_cached(client: Client) -> None:
    response = client.post("/api/match", {"text": SEED_LINE}, content_type="application/json")
    assert "no-store" in response["Cache-Control"]


@pytest.mark.usefixtures("seed")
def test_match_needs_no_csrf_token(seed: None) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/match", {"text": SEED_LINE}, content_type="application/json")
    assert response.status_code == 200


def test_match_refuses_a_paste_over_the_limit_with_413_json(client: Client, settings: Any) -> None:
    settings.KB_MAX_PASTE_BYTES = 1024  # the body is still under the upload limit
    response = client.post("/api/match", {"text": "x" * 2000}, content_type="application/json")
    assert response.status_code == 413
    assert "detail" in response.json()
    assert "no-store" in response["Cache-Control"]


def test_match_refuses_a_body_over_the_upload_limit_with_413_json(
    client: Client, settings: Any
) -> None:
    body = "y" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
    response = client.post("/api/match", {"text": body}, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"]


@pytest.mark.parametrize(
    "body",
    ["{not json", json.dumps(["text"]), json.dumps({"text": 5}), json.dumps({"other": "x"})],
)
def test_match_explains_a_malformed_json_body(client: Client, body: str) -> None:
    response = client.post("/api/match", body, content_type="application/json")
    assert response.status_code == 400
    assert "text" in response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        ("", "text/plain", 400),
        ("<x/>", "application/xml", 415),
        ("a=1", "application/x-www-form-urlencoded", 400),
    ],
)
def test_match_refuses_missing_or_unsupported_bodies(
    client: Client, body: str, content_type: str, status: int
) -> None:
    response = client.post("/api/match", body, content_type=content_type)
    assert response.status_code == status
    payload = response.json()
    assert payload["detail"]
    assert payload["status"] == status  # every refusal of a match reads the same way
    assert set(payload) >= {"error", "detail", "status"}
    assert "no-store" in response["Cache-Control"]


@pytest.mark.usefixtures("seed")
def test_match_takes_a_form_field_and_odd_charsets(client: Client) -> None:
    form = client.post("/api/match", {"text": SEED_LINE})
    assert form.json()["matches"][0]["record_id"] == SEED_ID
    odd = client.generic(
        "POST", "/api/match", SEED_LINE.encode(), content_type="text/plain; charset=made-up"
    )
    assert odd.status_code == 200
    assert odd.json()["matches"][0]["record_id"] == SEED_ID


def test_match_only_accepts_post(client: Client) -> None:
    assert client.get("/api/match").status_code == 405


# --- browse twins ----------------------------------------------------------------------------


def add(n: int, **overrides: Any) -> list[str]:
    lines = [
        make_line(errorMessage=f"Gizmo {i:03d} broke", messagePattern=f"Gizmo {i:03d} broke")
        for i in range(n)
    ]
    for line in lines:
        line["record"].update(overrides)
    assert import_lines(*lines).rejected == 0
    return [line["record"]["id"] for line in lines]


def html_ids(client: Client, url: str) -> list[str]:
    html = client.get(url).content.decode()
    return re.findall(r'class="record-link" href="/records/([^/]+)/"', html)


def test_records_twin_lists_what_the_page_lists(client: Client) -> None:
    add(30, severity="warning", tags=["twin"])
    add(3, severity="fatal")
    for query in ("", "?severity=warning", "?severity=warning&page=2", "?q=Gizmo+broke&tag=twin"):
        data = client.get("/api/records" + query).json()
        assert [item["id"] for item in data["items"]] == html_ids(client, "/records/" + query)
    data = client.get("/api/records?severity=warning").json()
    assert data["count"] == 30
    assert data["pages"] == 2
    assert data["next"].endswith("page=2")
    assert data["previous"] is None
    assert data["params"] == {"severity": "warning"}
    severity = next(f for f in data["facets"] if f["param"] == "severity")
    assert {v["value"]: v["count"] for v in severity["values"]} == {"warning": 30, "fatal": 3}
    item = data["items"][0]
    assert item["url"] == f"/records/{item['id']}/"
    assert item["api_url"] == f"/api/records/{item['id']}"


def test_records_twin_validates_page_size(client: Client) -> None:
    assert client.get("/api/records?page_size=1000").status_code == 422
    add(3)
    assert len(client.get("/api/records?page_size=2").json()["items"]) == 2


def test_record_twin_is_the_dataset_record(client: Client, seed: None) -> None:
    data = client.get(f"/api/records/{SEED_ID}").json()
    assert data["id"] == SEED_ID
    assert data["errorMessage"] == SEED["record"]["errorMessage"]
    assert data["solutions"] == SEED["record"]["solutions"]
    assert data["status"] == "published"
    assert data["url"] == f"/records/{SEED_ID}/"


def test_draft_records_are_not_served(client: Client, seed: None) -> None:
    set_status(ErrorRecord.objects.filter(pk=SEED_ID), Status.DRAFT)
    assert client.get(f"/api/records/{SEED_ID}").status_code == 404
    assert client.get("/api/records/nope").json() == {"detail": "No such record"}
    assert client.get("/api/records/a%00b").status_code == 404
    assert client.get("/api/tags/a%00b").status_code == 404


def test_tag_twins_list_counts_and_records(client: Client) -> None:
    add(27, tags=["tagged", "also"])
    tags = client.get("/api/tags").json()
    expected = {"name": "tagged", "count": 27, "url": "/tags/tagged/"}
    expected["api_url"] = "/api/tags/tagged"
    assert expected in tags["items"]
    assert client.get("/api/tags?q=tagg").json()["count"] == 1
    detail = client.get("/api/tags/tagged?page=2").json()
    assert detail["tag"] == "tagged"
    assert detail["count"] == 27
    assert detail["page"] == 2
    assert len(detail["items"]) == 2
    assert [i["id"] for i in detail["items"]] == html_ids(client, "/tags/tagged/?page=2")
    assert client.get("/api/tags/missing").status_code == 404


def test_openapi_schema_documents_every_endpoint(client: Client) -> None:
    schema = client.get("/api/openapi.json").json()
    paths = schema["paths"]
    assert set(paths) >= {
        "/api/match",
        "/api/records",
        "/api/records/{record_id}",
        "/api/tags",
        "/api/tags/{tag}",
    }
    body = paths["/api/match"]["post"]["requestBody"]["content"]
    assert set(body) >= {"application/json", "text/plain"}
    assert "413" in paths["/api/match"]["post"]["responses"]


def test_api_docs_page_renders_without_third_party_scripts(client: Client) -> None:
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "POST /api/match" in html
    assert "cdn." not in html
    assert "unsafe-inline" not in response["Content-Security-Policy"]


def test_operation_ids_stay_as_published_whichever_app_holds_the_view() -> None:
    """Clients generated from the schema call operations by id; moving a view to another
    module must not rename them."""
    from kb.api import api

    schema = api.get_openapi_schema()
    ids = {op["operationId"] for item in schema["paths"].values() for op in item.values()}
    assert ids == {
        "kb_api_match",
        "kb_api_records",
        "kb_api_record",
        "kb_api_tags",
        "kb_api_tag",
        "kb_api_loop_reports",
        "kb_api_loop_feedback",
        "kb_api_loop_proposals",
        "kb_api_loop_gaps",
    }
