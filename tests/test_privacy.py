"""docs/reliability.md#r27-paste-privacy: secrets pasted into the app are not kept anywhere.

A paste travels in a POST body only; the response is ``Cache-Control: no-store``; nothing
of it is written to the database (any table, including sessions and the cache) or to the
logs — also when the request fails and Django reports the error.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from django.db import connection
from django.test import Client
from django.views.debug import ExceptionReporter

from tests.factories import make_record

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAZZQQ7EXAMPLE4242"
PASSWORD = "hunter2-Sup3rS3cret-passw0rd"
PASTE = (
    "2026-11-30T03:12:44Z ERROR boto: credentials rejected\n"
    f"aws_access_key_id={AWS_KEY}\n"
    f"postgres://app:{PASSWORD}@db.internal:5432/app password={PASSWORD}\n"
    "Traceback (most recent call last):\n  ValueError: boom\n"
)
SECRETS = (AWS_KEY, PASSWORD)


@pytest.fixture(autouse=True)
def _setup(settings: object) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 100
    make_record()


def _database_text() -> str:
    """Every text value in every table, concatenated."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                chunks.extend(str(v) for v in row if isinstance(v, str | bytes | memoryview))
    return "\n".join(chunks)


def _post_everywhere(client: Client) -> list[object]:
    return [
        client.post("/match/", {"text": PASTE}),
        client.post("/match/", {"text": PASTE}, headers={"HX-Request": "true"}),
        client.post("/api/match", json.dumps({"text": PASTE}), content_type="application/json"),
        client.post("/api/match", PASTE, content_type="text/plain"),
    ]


def test_match_responses_are_no_store(client: Client) -> None:
    for response in _post_everywhere(client):
        assert "no-store" in response["Cache-Control"]


def test_secrets_are_not_written_to_the_database(client: Client) -> None:
    client.get("/")  # a session/CSRF cookie exists, as in a real visit
    _post_everywhere(client)
    stored = _database_text()
    for secret in SECRETS:
        assert secret not in stored


def test_secrets_are_not_logged(
    client: Client, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    _post_everywhere(client)
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    for secret in SECRETS:
        assert secret not in logged


@pytest.mark.urls("tests.urls_errors")
def test_a_failing_request_with_a_secret_body_logs_no_secret(
    settings: object, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    settings.DEBUG = False
    caplog.set_level(logging.DEBUG)
    client = Client(raise_request_exception=False)
    response = client.post("/__boom__/", {"text": PASTE})
    assert response.status_code == 500
    out, err = capfd.readouterr()
    logged = caplog.text + out + err + response.content.decode()
    assert "Internal Server Error" in caplog.text  # the failure itself is logged
    for secret in SECRETS:
        assert secret not in logged


def test_error_reports_hide_every_post_value(rf: object) -> None:
    request = rf.post("/match/", {"text": PASTE, "other": PASSWORD})
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        reporter = ExceptionReporter(request, type(exc), exc, exc.__traceback__)
        text = reporter.get_traceback_text()
        html = reporter.get_traceback_html()
    for secret in SECRETS:
        assert secret not in text
        assert secret not in html


def test_a_paste_in_the_url_is_not_processed_or_echoed(client: Client) -> None:
    response = client.get("/match/", {"text": PASTE})
    assert response.status_code in (302, 303, 405)
    for secret in SECRETS:
        assert secret not in response.content.decode()
        assert secret not in response.get("Location", "")


def test_the_paste_form_posts_its_body() -> None:
    html = Client().get("/").content.decode()
    form = re.search(r"<form[^>]*id=\"paste-form\"[^>]*>", html, re.DOTALL)
    assert form
    assert 'method="post"' in form.group(0).lower()


@pytest.mark.django_db(transaction=True)
def test_production_server_logs_hold_no_secret(tmp_path: object) -> None:
    """gunicorn with ``kb/gunicorn_conf.py``: its access log has no query string or body."""
    from pathlib import Path

    from tests.servers import Gunicorn, json_post

    log_dir = Path(str(tmp_path))
    with Gunicorn(workers=1, log_dir=log_dir, access_format=None) as server:
        server.request("GET", f"/records/?q={AWS_KEY}")
        status = json_post(server, "/api/match", {"text": PASTE})[0]
        assert status == 200
        server.request("POST", "/api/match", PASTE.encode(), {"Content-Type": "text/plain"})
    logged = server.access_log.read_text() + server.errors()
    assert "/api/match" in logged  # the requests were logged, without their secrets
    for secret in SECRETS:
        assert secret not in logged
