"""RELIABILITY #26: the match rate limit holds across worker processes.

The counter lives in the database cache, so request N+1 in a window gets 429 no matter
which gunicorn worker serves it; per-process memory would allow N per worker.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb.middleware import RATE_WINDOW_SECONDS, client_address
from tests.servers import Gunicorn, json_post

LIMIT = 5


def wait_for_fresh_window(margin: float) -> None:
    """The limit counts per fixed window: start far enough from its end that the test's
    requests all fall into one window."""
    left = RATE_WINDOW_SECONDS - time.time() % RATE_WINDOW_SECONDS
    if left < margin:
        time.sleep(left + 0.05)


@pytest.fixture
def limited(settings: object) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = LIMIT  # type: ignore[attr-defined]
    cache.clear()
    wait_for_fresh_window(3)


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_api_match_answers_429_json_with_retry_after_past_the_limit(client: Client) -> None:
    statuses = [
        client.post("/api/match", {"text": "x"}, content_type="application/json").status_code
        for _ in range(LIMIT)
    ]
    assert 429 not in statuses
    response = client.post("/api/match", {"text": "x"}, content_type="application/json")
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    body = response.json()
    assert body["status"] == 429
    assert body["retry_after"] == int(response["Retry-After"])
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_paste_endpoint_answers_429_with_a_friendly_htmx_fragment(client: Client) -> None:
    for _ in range(LIMIT):
        client.post("/match/", {"text": "x"}, headers={"HX-Request": "true"})
    response = client.post("/match/", {"text": "x"}, headers={"HX-Request": "true"})
    assert response.status_code == 429
    assert response["Retry-After"]
    html = response.content.decode()
    assert 'role="alert"' in html
    assert "Try again in" in html
    assert "<html" not in html  # a fragment for htmx, not a page


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_paste_endpoint_answers_429_with_a_page_without_javascript(client: Client) -> None:
    for _ in range(LIMIT + 1):
        response = client.post("/match/", {"text": "x"})
    assert response.status_code == 429
    assert "<html" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_limit_counts_per_client_and_ignores_other_pages(client: Client) -> None:
    for _ in range(LIMIT + 3):
        assert client.get("/healthz").status_code == 200
    for _ in range(LIMIT):
        client.post("/api/match", {"text": "x"}, content_type="application/json")
    other = Client(REMOTE_ADDR="10.0.0.9")
    ok = other.post("/api/match", {"text": "x"}, content_type="application/json")
    assert ok.status_code != 429


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_a_refused_client_is_refused_again_without_touching_the_database(
    client: Client,
) -> None:
    """A client hammering past its budget costs no write per refusal: the process
    remembers the refusal until the window ends."""
    for _ in range(LIMIT + 1):
        client.post("/api/match", {"text": "x"}, content_type="application/json")
    with CaptureQueriesContext(connection) as queries:
        again = client.post("/api/match", {"text": "x"}, content_type="application/json")
    assert again.status_code == 429
    assert 1 <= int(again["Retry-After"]) <= RATE_WINDOW_SECONDS
    assert len(queries) == 0, [q["sql"] for q in queries]
    other = Client(REMOTE_ADDR="10.0.0.9")  # only that client: others are still counted
    assert (
        other.post("/api/match", {"text": "x"}, content_type="application/json").status_code != 429
    )


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_big_pastes_use_more_of_the_budget(client: Client, settings: object) -> None:
    """A match counts once per started KB_RATE_LIMIT_UNIT_BYTES of body: with a 1 KiB
    unit and a limit of 5, two 2.5 KiB pastes (3 units each) are all one minute allows,
    while five small ones pass."""
    settings.KB_RATE_LIMIT_UNIT_BYTES = 1024  # type: ignore[attr-defined]
    big = {"text": "E" * 2500}
    first = client.post("/api/match", big, content_type="application/json")
    second = client.post("/api/match", big, content_type="application/json")
    assert first.status_code == 200
    assert second.status_code == 429
    other = Client(REMOTE_ADDR="10.0.0.9")
    small = [
        other.post("/api/match", {"text": "x"}, content_type="application/json").status_code
        for _ in range(LIMIT)
    ]
    assert 429 not in small


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_a_body_bigger_than_the_whole_budget_is_still_served_in_a_fresh_window(
    client: Client, settings: object
) -> None:
    settings.KB_RATE_LIMIT_UNIT_BYTES = 16  # type: ignore[attr-defined]
    response = client.post("/api/match", {"text": "E" * 500}, content_type="application/json")
    assert response.status_code == 200
    again = client.post("/api/match", {"text": "x"}, content_type="application/json")
    assert again.status_code == 429


def test_client_address_trusts_only_the_configured_proxies(settings: object, rf: object) -> None:
    request = rf.get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 1.2.3.4")  # type: ignore[attr-defined]
    settings.KB_TRUSTED_PROXY_COUNT = 0  # type: ignore[attr-defined]
    assert client_address(request) == "127.0.0.1"
    settings.KB_TRUSTED_PROXY_COUNT = 1  # type: ignore[attr-defined]
    assert client_address(request) == "1.2.3.4"  # the spoofable left entry is not trusted


@pytest.mark.django_db(transaction=True)
def test_limit_holds_across_two_gunicorn_workers(tmp_path: Path) -> None:
    limit = 12
    with Gunicorn(workers=2, log_dir=tmp_path, KB_RATE_LIMIT_PER_MINUTE=str(limit)) as server:
        # Concurrent requests so that both workers serve some of them; on a busy machine
        # one worker may take them all, so try again (new window) until both did.
        for attempt in range(4):
            cache.clear()
            if attempt:  # the workers remember this window's refusal: start a new one
                time.sleep(RATE_WINDOW_SECONDS - time.time() % RATE_WINDOW_SECONDS + 0.05)
            wait_for_fresh_window(10)
            logged = len(server.worker_pids())
            with ThreadPoolExecutor(max_workers=8) as pool:
                first = list(
                    pool.map(
                        lambda _: json_post(server, "/api/match", {"text": "x"})[0], range(limit)
                    )
                )
            status, headers, body = json_post(server, "/api/match", {"text": "x"})
            served_by = set(server.worker_pids()[logged:])
            if len(served_by) == 2:
                break
        errors = server.errors()
    assert 429 not in first
    assert all(s < 500 for s in first), first
    assert status == 429
    assert int(headers["Retry-After"]) >= 1
    assert json.loads(body)["status"] == 429
    assert len(served_by) == 2, f"requests did not reach both workers: {served_by}"
    assert "Traceback" not in errors


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_limiter_fails_open_when_its_counter_is_unavailable(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    from unittest import mock

    from django.db.utils import OperationalError

    with mock.patch("kb.middleware._locked_increment", side_effect=OperationalError("no table")):
        statuses = [
            client.post("/api/match", {"text": "x"}, content_type="application/json").status_code
            for _ in range(LIMIT + 2)
        ]
    assert 429 not in statuses
    assert "rate limiter unavailable" in caplog.text
