"""htmx hardening, CSRF and friendly failure without a browser (the browser half:
tests/browser/test_hardening.py); docs/reliability.md#r5-htmx-config, #r8-csrf and
#r28-friendly-failure state the bars.

The htmx configuration is declared in the page (a ``<meta name="htmx-config">``), CSRF is
enforced on every htmx post, state-changing endpoints refuse GET, and a server error inside
an htmx request answers a generic fragment with no internals.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.factories import make_record

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def _no_rate_limit(settings: object) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0


def _htmx_config(html: str) -> dict[str, object]:
    meta = re.search(r"<meta name=\"htmx-config\" content='([^']*)'", html)
    assert meta, "no htmx-config meta tag"
    return json.loads(meta.group(1))


@pytest.mark.parametrize("path", ["/", "/records/", "record"])
def test_pages_declare_the_hardened_htmx_config(path: str) -> None:
    if path == "record":
        path = f"/records/{make_record().pk}/"
    config = _htmx_config(Client().get(path).content.decode())
    assert config["allowEval"] is False
    assert config["allowScriptTags"] is False
    assert config["selfRequestsOnly"] is True
    assert config["includeIndicatorStyles"] is False
    assert config["historyCacheSize"] == 0


def test_the_admin_runs_the_same_htmx_config_as_the_site(admin_client: Client) -> None:
    """One configuration: the admin's htmx pages (the pattern bench, an import's progress)
    swap the same friendly 400/413/429 fragments the public pages do."""
    from kb.records.models import ImportJob

    record = make_record()
    job = ImportJob.objects.create(source="demo.jsonl", state=ImportJob.State.RUNNING, size=10)
    site = _htmx_config(Client().get("/").content.decode())
    for path in (
        f"/admin/kb/errorrecord/{record.pk}/change/",
        f"/admin/kb/importjob/{job.pk}/change/",
    ):
        response = admin_client.get(path)
        assert response.status_code == 200, path
        assert _htmx_config(response.content.decode()) == site, path
    assert {"code": "400|413|429", "swap": True, "error": False} in site["responseHandling"]


def test_htmx_is_served_from_our_origin_with_the_nonce() -> None:
    response = Client().get("/")
    html = response.content.decode()
    for src in re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", html):
        assert src.startswith("/static/"), src


def _csrf_client() -> tuple[Client, str]:
    client = Client(enforce_csrf_checks=True)
    html = client.get("/").content.decode()
    token = json.loads(re.search(r"hx-headers='([^']*)'", html).group(1))["X-CSRFToken"]
    return client, token


def test_htmx_post_with_the_page_token_is_accepted() -> None:
    client, token = _csrf_client()
    response = client.post("/match/", {"text": "Error: boom"}, headers={**HX, "X-CSRFToken": token})
    assert response.status_code == 200


@pytest.mark.parametrize("token", ["bogus", "", None])
def test_htmx_post_with_a_bogus_or_missing_token_is_403(token: str | None) -> None:
    client, _ = _csrf_client()
    headers = dict(HX)
    if token is not None:
        headers["X-CSRFToken"] = token
    response = client.post("/match/", {"text": "Error: boom"}, headers=headers)
    assert response.status_code == 403
    assert "Traceback" not in response.content.decode()


def test_match_by_get_never_runs_the_matcher() -> None:
    """A paste never travels in a URL: GET /match/ goes back to the form."""
    response = Client().get("/match/", {"text": "Error: boom"})
    assert response.status_code in (302, 303, 405)


def test_api_match_refuses_get() -> None:
    """Owner: kb/api.py — ``POST /api/match`` only (405 for GET)."""
    assert Client().get("/api/match").status_code == 405


@pytest.mark.urls("tests.urls_errors")
def test_server_error_in_an_htmx_request_is_a_generic_fragment(settings: object) -> None:
    settings.DEBUG = False
    response = Client(raise_request_exception=False).get("/__boom__/", headers=HX)
    assert response.status_code == 500
    html = response.content.decode()
    assert "<html" not in html.lower()
    assert 'role="alert"' in html
    assert "SECRET_SETTING_VALUE" not in html
    assert "Traceback" not in html
