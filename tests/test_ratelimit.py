"""The match rate limit holds across worker processes (docs/reliability.md#r26-rate-limit).

The counter lives in the database cache, so request N+1 in a window gets 429 no matter
which gunicorn worker serves it; per-process memory would allow N per worker.

In-process tests put the limiter on a fake clock (the ``limiter_clock`` fixture) one second
into a window and move it on to reach the next one: no test waits for a real window to end.
The gunicorn test cannot reach its workers' clocks, so it notes the real window before
and after its burst and tries again, as a new client, when the two differ.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kb.http import client_address
from kb.ops.middleware import RATE_WINDOW_SECONDS
from tests.clocks import FakeClock, SteppingClock
from tests.factories import make_record
from tests.servers import Gunicorn, json_post

LIMIT = 5


def api_match(client: Client, payload: dict | None = None) -> HttpResponse:
    return client.post("/api/match", payload or {"text": "x"}, content_type="application/json")


def statuses(client: Client, n: int = LIMIT) -> list[int]:
    """The statuses of ``n`` small matches from ``client``."""
    return [api_match(client).status_code for _ in range(n)]


@pytest.fixture
def limited(settings: object, limiter_clock: FakeClock) -> FakeClock:
    settings.KB_RATE_LIMIT_PER_MINUTE = LIMIT
    cache.clear()
    return limiter_clock


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_api_match_answers_429_json_with_retry_after_past_the_limit(client: Client) -> None:
    assert 429 not in statuses(client)
    response = api_match(client)
    assert response.status_code == 429
    assert int(response["Retry-After"]) == RATE_WINDOW_SECONDS - 1  # the rest of the window
    body = response.json()
    assert body["status"] == 429
    assert body["retry_after"] == int(response["Retry-After"])
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_a_refused_client_is_served_again_when_the_window_ends(
    client: Client, limited: FakeClock
) -> None:
    for _ in range(LIMIT):
        api_match(client)
    limited.advance(30)
    refused = api_match(client)
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert wait == RATE_WINDOW_SECONDS - 31
    limited.advance(wait - 1)  # a second before the window ends: still refused
    still = api_match(client)
    assert still.status_code == 429
    assert int(still["Retry-After"]) == 1
    limited.advance(1)  # the next window: a fresh budget, not the remembered refusal
    assert 429 not in statuses(client)


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
        api_match(client)
    other = Client(REMOTE_ADDR="10.0.0.9")
    ok = api_match(other)
    assert ok.status_code != 429


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_a_refused_client_is_refused_again_without_touching_the_database(
    client: Client,
) -> None:
    """A client hammering past its budget costs no write per refusal: the process
    remembers the refusal until the window ends."""
    for _ in range(LIMIT + 1):
        api_match(client)
    with CaptureQueriesContext(connection) as queries:
        again = api_match(client)
    assert again.status_code == 429
    assert int(again["Retry-After"]) == RATE_WINDOW_SECONDS - 1
    assert len(queries) == 0, [q["sql"] for q in queries]
    other = Client(REMOTE_ADDR="10.0.0.9")  # only that client: others are still counted
    assert api_match(other).status_code != 429


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_big_pastes_use_more_of_the_budget(client: Client, settings: object) -> None:
    """A match counts once per started KB_RATE_LIMIT_UNIT_BYTES of body: with a 1 KiB
    unit and a limit of 5, two 2.5 KiB pastes (3 units each) are all one minute allows,
    while five small ones pass."""
    settings.KB_RATE_LIMIT_UNIT_BYTES = 1024
    big = {"text": "E" * 2500}
    first = api_match(client, big)
    second = api_match(client, big)
    assert first.status_code == 200
    assert second.status_code == 429
    other = Client(REMOTE_ADDR="10.0.0.9")
    small = statuses(other)
    assert 429 not in small


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_a_body_bigger_than_the_whole_budget_is_still_served_in_a_fresh_window(
    client: Client, settings: object
) -> None:
    settings.KB_RATE_LIMIT_UNIT_BYTES = 16
    response = api_match(client, {"text": "E" * 500})
    assert response.status_code == 200
    again = api_match(client)
    assert again.status_code == 429


def test_client_address_trusts_only_the_configured_proxies(settings: object, rf: object) -> None:
    request = rf.get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 1.2.3.4")
    settings.KB_TRUSTED_PROXY_COUNT = 0
    assert client_address(request) == "127.0.0.1"
    settings.KB_TRUSTED_PROXY_COUNT = 1
    assert client_address(request) == "1.2.3.4"  # the spoofable left entry is not trusted


def _real_window() -> int:
    return int(time.time() // RATE_WINDOW_SECONDS)


class _HeldRequest:
    """A ``POST`` of a small paste sent up to the end of its first line and held there.

    A sync gunicorn worker takes one connection at a time and blocks reading it, so the
    worker that accepts this one serves nothing else until `finish` sends the rest:
    every request sent meanwhile goes to the other worker. Connections are accepted in
    the order they were made, so the held one is taken first, whatever the machine's load.
    """

    def __init__(self, server: Gunicorn, path: str, headers: dict[str, str]) -> None:
        self.body = json.dumps({"text": "x"}).encode()
        lines = [
            "Host: 127.0.0.1",
            "Content-Type: application/json",
            f"Content-Length: {len(self.body)}",
            "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        self.rest = ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
        self.sock.sendall(f"POST {path} HTTP/1.1\r\n".encode())

    def finish(self) -> int:
        """Send the rest and return the answer's status."""
        self.sock.sendall(self.rest)
        answer = b""
        while chunk := self.sock.recv(65536):
            answer += chunk
        self.sock.close()
        return int(answer.split(b" ", 2)[1])


@pytest.mark.django_db(transaction=True)
def test_limit_holds_across_two_gunicorn_workers(tmp_path: Path) -> None:
    """Request N+1 is refused although neither worker served N on its own.

    Which worker serves what is set, not left to chance: a held request keeps one worker
    busy while the other serves all but one of the limit, then the held one completes on
    the first worker. A per-process count would be at most N - 1 in either worker, so
    the next request, whichever worker takes it, would pass; the shared count refuses it.
    A burst that straddles two windows is tried again as a new client (the proxy's
    address for it), which starts with no count: an attempt takes far less than a
    window, so a second straddle cannot happen."""
    limit = 12
    with Gunicorn(
        workers=2,
        log_dir=tmp_path,
        KB_RATE_LIMIT_PER_MINUTE=str(limit),
        KB_TRUSTED_PROXY_COUNT="1",
    ) as server:
        for attempt in range(2):
            who = {"X-Forwarded-For": f"10.26.0.{attempt + 1}"}
            path = f"/api/match?attempt={attempt}"  # the limit counts the path, not the query
            window = _real_window()
            held = _HeldRequest(server, f"{path}&held", who)  # one worker takes it and waits
            first = [json_post(server, path, {"text": "x"}, **who)[0] for _ in range(limit - 1)]
            first.append(held.finish())  # the limit's last request, on the held worker
            status, headers, body = json_post(server, f"{path}&last", {"text": "x"}, **who)
            one_window = _real_window() == window
            if one_window:
                break
        errors = server.errors()
    # Who served the first N, from the access log (pid, request line, status), read once
    # the server has stopped and every line is written.
    served: dict[str, set[str]] = {"held": set(), "other": set()}
    for line in server.access_log.read_text().splitlines():
        pid, request, code = line.split(" ", 1)[0], *line.split(" ", 1)[1].rsplit(" ", 1)
        if code == "200" and f"attempt={attempt}&held " in request:
            served["held"].add(pid)
        elif code == "200" and f"attempt={attempt} " in request:
            served["other"].add(pid)
    assert one_window, "both attempts straddled two windows"
    assert len(served["held"]) == len(served["other"]) == 1, served
    assert served["held"] != served["other"], served
    assert first == [200] * limit, first
    assert status == 429
    assert int(headers["Retry-After"]) >= 1
    assert json.loads(body)["status"] == 429
    assert "Traceback" not in errors


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_limiter_fails_open_when_its_counter_is_unavailable(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    from unittest import mock

    from django.db.utils import OperationalError

    with mock.patch(
        "kb.ops.middleware._locked_increment", side_effect=OperationalError("no table")
    ):
        assert 429 not in statuses(client, LIMIT + 2)
    assert "rate limiter unavailable" in caplog.text


# --- charges follow cost (docs/reliability.md#r35-costs-and-proposals) ------------------


def report(client: Client, text: str = "ERROR Widget frobnication failed badly") -> int:
    body = {"text": text, "dry_run": True}
    return client.post("/api/reports", body, content_type="application/json").status_code


@pytest.fixture
def cpu_costs(monkeypatch: pytest.MonkeyPatch, settings: object) -> SteppingClock:
    """Every request charged by cost takes 0.5 s of CPU on the limiter's clock; 10 ms a
    unit makes that 50 units."""
    from kb.ops import middleware

    settings.KB_RATE_LIMIT_CPU_UNIT_MS = 10
    cpu = SteppingClock(0.5)
    monkeypatch.setattr(middleware, "cpu_clock", cpu)
    return cpu


@pytest.mark.django_db
@pytest.mark.usefixtures("limited", "cpu_costs")
def test_reports_and_proposals_are_charged_the_cpu_time_they_took(settings: object) -> None:
    """With a budget of 100 units, two reports of 50 units each fill a minute and the
    third is refused: before, each counted one unit, its body's."""
    settings.KB_RATE_LIMIT_PER_MINUTE = 100
    client = Client()
    assert [report(client) for _ in range(3)] == [200, 200, 429]
    record = make_record()
    other = Client(REMOTE_ADDR="10.0.0.9")
    body = {"record_id": record.pk, "field": "solutions"}
    statuses = [
        other.post(
            "/api/proposals", {**body, "text": f"Step {n}"}, content_type="application/json"
        ).status_code
        for n in range(3)
    ]
    assert statuses == [201, 201, 429]
    form = Client(REMOTE_ADDR="10.0.0.10")  # the HTML form too: it shares the gate
    pages = [form.post("/report/", {"text": "ERROR Widget failed"}).status_code for _ in range(3)]
    assert pages == [200, 200, 429]


@pytest.mark.django_db
@pytest.mark.usefixtures("limited", "cpu_costs")
def test_matches_and_votes_are_charged_their_body_only(settings: object) -> None:
    """Matching's cost follows the paste's size (the bytes charge); a vote is one row."""
    client = Client()
    assert 429 not in statuses(client)  # LIMIT small matches, each "taking" 0.5 s
    record = make_record()
    other = Client(REMOTE_ADDR="10.0.0.9")
    vote = {"record_id": record.pk, "verdict": "fixed"}
    votes = [
        other.post("/api/feedback", vote, content_type="application/json").status_code
        for _ in range(LIMIT)
    ]
    assert 429 not in votes


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_the_cpu_charge_counts_beyond_the_bodys_and_never_past_the_budget(
    settings: object, monkeypatch: pytest.MonkeyPatch, limited: FakeClock
) -> None:
    """A 5 KiB report counts 5 units (1 KiB a unit) up front; 30 ms of CPU (3 units) adds
    nothing to that, 80 ms (8 units) adds 3; a handling that took the whole budget and more
    is charged the budget, so the next window serves the client again."""
    from kb.ops import middleware

    settings.KB_RATE_LIMIT_PER_MINUTE = 10
    settings.KB_RATE_LIMIT_UNIT_BYTES = 1024
    settings.KB_RATE_LIMIT_CPU_UNIT_MS = 10
    text = "ERROR Widget failed " + "x" * 5000
    monkeypatch.setattr(middleware, "cpu_clock", SteppingClock(0.03))
    assert [report(Client(), text) for _ in range(3)] == [200, 200, 429]  # 5 + 5, then 15
    monkeypatch.setattr(middleware, "cpu_clock", SteppingClock(0.08))
    second = Client(REMOTE_ADDR="10.0.0.9")
    assert [report(second, text) for _ in range(2)] == [200, 429]  # 8, then 16
    monkeypatch.setattr(middleware, "cpu_clock", SteppingClock(600.0))
    third = Client(REMOTE_ADDR="10.0.0.10")
    assert [report(third) for _ in range(2)] == [200, 429]
    limited.advance(RATE_WINDOW_SECONDS)
    assert report(third) == 200


@pytest.mark.django_db
@pytest.mark.usefixtures("limited")
def test_a_cpu_unit_of_zero_charges_the_body_only(
    settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kb.ops import middleware

    settings.KB_RATE_LIMIT_CPU_UNIT_MS = 0
    monkeypatch.setattr(middleware, "cpu_clock", SteppingClock(600.0))
    client = Client()
    assert [report(client) for _ in range(LIMIT + 1)] == [200] * LIMIT + [429]
