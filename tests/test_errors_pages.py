"""Friendly error pages: plain words, security headers, no traceback, a fragment for htmx."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory

from kb import http as errors
from tests.factories import SEED, import_lines

pytestmark = pytest.mark.django_db


def assert_secure_headers(response) -> None:
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert re.search(r"script-src 'self' 'nonce-[^']+'", csp)
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


def test_404_is_a_friendly_page_with_security_headers(client: Client) -> None:
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Page not found</h1>" in html
    assert 'href="/"' in html
    assert_secure_headers(response)
    nonce = re.search(r"'nonce-([^']+)'", response["Content-Security-Policy"]).group(1)
    assert all(f'nonce="{nonce}"' in tag for tag in re.findall(r"<script\b[^>]*>", html))


def test_404_for_htmx_is_a_fragment(client: Client) -> None:
    response = client.get("/records/nope/", headers={"HX-Request": "true"})
    assert response.status_code == 404
    html = response.content.decode()
    assert "<html" not in html
    assert 'role="alert"' in html
    assert "HX-Request" in response["Vary"]


def test_500_shows_no_traceback_for_pages_and_htmx(client: Client, monkeypatch) -> None:
    import_lines(SEED)

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("SECRET_KEY=hunter2 in a stack frame")

    monkeypatch.setattr("kb.browse.record_page.highlight_snippet", boom)
    client.raise_request_exception = False
    page = client.get("/records/c36bebe8cdedec02/")
    assert page.status_code == 500
    html = page.content.decode()
    assert "Something went wrong" in html
    assert "hunter2" not in html
    assert "Traceback" not in html
    assert "RuntimeError" not in html
    assert_secure_headers(page)
    fragment = client.get("/records/c36bebe8cdedec02/", headers={"HX-Request": "true"})
    assert fragment.status_code == 500
    body = fragment.content.decode()
    assert "<html" not in body
    assert "Something went wrong on our side" in body
    assert "hunter2" not in body


def test_400_for_a_bad_host_is_friendly(client: Client) -> None:
    response = client.get("/", HTTP_HOST="attacker.example")
    assert response.status_code == 400
    html = response.content.decode()
    assert "Bad request" in html
    assert "attacker.example" not in html


def test_403_page_is_friendly() -> None:
    request = RequestFactory().get("/")
    response = errors.permission_denied(request, PermissionDenied("internal detail"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "Not allowed" in html
    assert "internal detail" not in html


def test_500_falls_back_to_fixed_text_when_its_template_fails(monkeypatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("template engine down")

    monkeypatch.setattr(errors, "render", broken)
    response = errors.server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert b"Something went wrong" in response.content


def test_csrf_failure_is_friendly_for_pages_and_htmx(settings) -> None:
    settings.CSRF_FAILURE_VIEW = "kb.http.csrf_failure"
    client = Client(enforce_csrf_checks=True)
    page = client.post("/match/", {"text": "x"})
    assert page.status_code == 403
    assert "Not allowed" in page.content.decode()
    fragment = client.post("/match/", {"text": "x"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 403
    assert "Your session expired" in fragment.content.decode()


@pytest.mark.parametrize("htmx", [False, True])
def test_a_body_past_djangos_field_limit_is_the_too_large_refusal(htmx: bool) -> None:
    """``RequestDataTooBig`` (a field Django will not buffer) is answered 413 like every
    other too-large request, not as a generic 400."""
    from django.core.exceptions import RequestDataTooBig

    headers = {"HX-Request": "true"} if htmx else {}
    request = RequestFactory().post("/admin/kb/importjob/upload/", headers=headers)
    response = errors.bad_request(request, RequestDataTooBig("too big"))
    assert response.status_code == 413
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    assert "That is more than we can match at once" in html
    assert ("<html" in html) is not htmx
