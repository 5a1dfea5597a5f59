"""Every response type carries the security headers, and the CSP nonce is fresh per
response and on every script (docs/reliability.md#r2-security-headers, #r3-csp-nonce,
#r9-clickjacking).

Pages, htmx partials, the API, health, static files, and the 400/403/404/413/429/500
responses all pass through the same middleware stack; this walks one of each.
"""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.test import Client

from tests.factories import make_record

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
REQUIRED_CSP = [
    "default-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
]
NONCE = re.compile(r"script-src 'self' 'nonce-([A-Za-z0-9_\-+/=]+)'")


def _client(**kwargs: object) -> Client:
    return Client(raise_request_exception=False, **kwargs)


def _responses(record_id: str) -> dict[str, object]:
    c = _client()
    strict = _client(enforce_csrf_checks=True)
    big = "x" * (3 * 1024 * 1024)
    out: dict[str, object] = {
        "page /": c.get("/"),
        "page record": c.get(f"/records/{record_id}/"),
        "page records": c.get("/records/"),
        "page tags": c.get("/tags/"),
        "partial match": c.post("/match/", {"text": "Error: boom"}, headers=HX),
        "page match (no JS)": c.post("/match/", {"text": "Error: boom"}),
        "partial records": c.get("/records/", headers=HX),
        "api match": c.post("/api/match", {"text": "boom"}, content_type="application/json"),
        "api schema": c.get("/api/openapi.json"),
        "health": c.get("/healthz"),
        "static": c.get("/static/kb/app.css"),
        "admin login": c.get("/admin/login/"),
        "400 bad host": c.get("/", headers={"host": "evil.example"}),
        "403 csrf": strict.post("/match/", {"text": "x"}),
        "404 page": c.get("/no/such/page/"),
        "404 partial": c.get("/no/such/page/", headers=HX),
        "413 partial": c.post(
            "/match/", f"text={big}", content_type="application/x-www-form-urlencoded", headers=HX
        ),
        "413 api": c.post("/api/match", json.dumps({"text": big}), content_type="application/json"),
    }
    return out


@pytest.fixture
def responses(settings: object) -> dict[str, object]:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    record = make_record()
    return _responses(record.pk)


def _assert_headers(name: str, response: object) -> None:
    headers = response.headers
    csp = headers.get("Content-Security-Policy", "")
    for directive in REQUIRED_CSP:
        assert directive in csp, f"{name}: {directive!r} missing from {csp!r}"
    assert NONCE.search(csp), f"{name}: no script-src nonce in {csp!r}"
    assert "unsafe-inline" not in csp, name
    assert "unsafe-eval" not in csp, name
    assert headers.get("X-Content-Type-Options") == "nosniff", name
    assert headers.get("Referrer-Policy"), name
    assert headers.get("Cross-Origin-Opener-Policy") == "same-origin", name
    assert headers.get("X-Frame-Options") == "DENY", name


def test_every_response_type_has_the_security_headers(responses: dict[str, object]) -> None:
    for name, response in responses.items():
        _assert_headers(name, response)


def test_the_walk_covers_the_status_codes_it_claims(responses: dict[str, object]) -> None:
    status = {name: r.status_code for name, r in responses.items()}
    assert status["400 bad host"] == 400
    assert status["403 csrf"] == 403
    assert status["404 page"] == 404
    assert status["413 partial"] == 413
    assert status["413 api"] == 413
    assert status["page /"] == 200


@pytest.mark.usefixtures("limiter_clock")
def test_rate_limited_response_has_the_security_headers(settings: object) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 1
    cache.clear()
    c = _client()
    c.post("/api/match", {"text": "x"}, content_type="application/json")
    response = c.post("/api/match", {"text": "x"}, content_type="application/json")
    assert response.status_code == 429
    _assert_headers("429", response)


@pytest.mark.urls("tests.urls_errors")
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_500_has_the_security_headers_and_no_internals(settings: object, htmx: bool) -> None:
    settings.DEBUG = False
    response = _client().get("/__boom__/", headers=HX if htmx else {})
    assert response.status_code == 500
    _assert_headers("500", response)
    body = response.content.decode()
    assert "SECRET_SETTING_VALUE" not in body
    assert "Traceback" not in body
    assert "RuntimeError" not in body


def test_hsts_in_production_mode(settings: object) -> None:
    settings.DEBUG = False
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_SSL_REDIRECT = True
    response = _client().get("/", secure=True)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")
    plain = _client().get("/")
    assert plain.status_code == 301
    assert plain["Location"].startswith("https://")
    assert _client().get("/healthz").status_code == 200  # probes over plain HTTP still work


def _nonce(response: object) -> str:
    match = NONCE.search(response["Content-Security-Policy"])
    assert match
    return match.group(1)


@pytest.mark.parametrize("path", ["/", "/admin/login/"])
def test_nonce_differs_per_response_and_every_script_carries_it(path: str) -> None:
    first, second = _client().get(path), _client().get(path)
    assert _nonce(first) != _nonce(second)
    for response in (first, second):
        html = response.content.decode()
        scripts = re.findall(r"<script\b[^>]*>", html)
        for tag in scripts:
            assert f'nonce="{_nonce(response)}"' in tag, tag
        assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler in page"


def test_paste_page_has_scripts_to_check() -> None:
    assert "<script" in _client().get("/").content.decode()
