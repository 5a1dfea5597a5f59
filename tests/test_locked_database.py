"""A locked database is a degraded service, not an outage (docs/reliability.md#r31-locked-database).

A real gunicorn (DEBUG=0, two workers, ``SQLITE_BUSY_TIMEOUT=1``) on the test database's
SQLite file while another process holds the write lock (``BEGIN IMMEDIATE``, as an open
``sqlite3`` shell or a long ``import_records --atomic`` does): reads and pastes answer as
usual, a write answers 503 with ``Retry-After`` (the JSON refusal on the API, the error page
on a form) once its busy timeout ran out, ``/healthz`` says "degraded" with the reason;
released, the same write is stored and ``/healthz`` says ok. How long a write waits is
asserted as the busy timeout in force (tests/test_sqlite_pragmas.py), not timed here.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator

import pytest
from django.db import connection

from kb.http import WRITE_RETRY_AFTER_SECONDS
from kb.loop.models import Gap
from tests.factories import make_record
from tests.locks import WriteLock
from tests.servers import Gunicorn, json_post
from tests.test_multi_host import Browser

pytestmark = pytest.mark.django_db(transaction=True)
sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="SQLite's database-wide write lock"
)

UNKNOWN = (
    "2026-12-01T04:00:00Z INFO worker started\n"
    "2026-12-01T04:00:01Z ERROR frobnicator: spline 7 failed to reticulate on node-7\n"
)


def _report_form(browser: Browser, token: str) -> tuple[int, dict[str, str], bytes]:
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "text": UNKNOWN, "action": "send"}
    ).encode()
    return browser.request(
        "POST", "/report/", body, **{"Content-Type": "application/x-www-form-urlencoded"}
    )


def _health(server: Gunicorn) -> tuple[int, dict[str, str]]:
    status, _head, body = server.request("GET", "/healthz")
    return status, json.loads(body)


@sqlite_only
def test_while_another_process_holds_the_write_lock_reads_answer_and_writes_get_503() -> None:
    record = make_record()
    paste = f"ERROR {record.error_message.replace('{:#?}', '42')}"
    with Gunicorn(workers=2, SQLITE_BUSY_TIMEOUT="1") as server:
        browser = Browser(server)
        token = browser.token("/")
        assert _health(server) == (200, {"status": "ok"})
        status, _head, body = json_post(server, "/api/match", {"text": paste})
        assert status == 200, body[:500]  # the matcher is built before the lock

        with WriteLock():
            # Reads and pastes answer as usual.
            status, _head, body = json_post(server, "/api/match", {"text": paste})
            assert status == 200, body[:500]
            assert record.pk in [m["record_id"] for m in json.loads(body)["matches"]]
            assert server.request("GET", f"/records/{record.pk}/")[0] == 200
            assert server.request("GET", "/records/")[0] == 200

            # The health check tells "writes failing" from "down".
            status, health = _health(server)
            assert status == 200
            assert health == {"status": "degraded", "reason": "writes failing", "writes": "locked"}

            # A JSON write: 503, Retry-After, the JSON refusal.
            status, head, body = json_post(server, "/api/reports", {"text": UNKNOWN})
            assert status == 503, body[:500]
            assert head["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
            assert head["Content-Type"] == "application/json"
            refusal = json.loads(body)
            assert refusal["status"] == 503
            assert refusal["retry_after"] == WRITE_RETRY_AFTER_SECONDS

            # A form write: 503, Retry-After, the site's error page.
            status, head, body = _report_form(browser, token)
            assert status == 503, body[:500]
            assert head["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
            assert head["Content-Type"].startswith("text/html")
            assert b"Saving is paused for a moment" in body

        assert _health(server) == (200, {"status": "ok"})
        status, _head, body = json_post(server, "/api/reports", {"text": UNKNOWN})
        assert status == 201, body[:500]
        assert _report_form(browser, token)[0] == 201
        assert "Traceback" not in server.errors()
    assert Gap.objects.count() == 1  # both filed reports folded into one gap


@pytest.fixture
def writes_resume() -> Iterator[None]:
    from kb.http import resume_writes

    yield
    resume_writes()  # the pause is this process's: later tests start without it


@sqlite_only
@pytest.mark.usefixtures("writes_resume")
def test_after_one_write_declined_the_next_ones_wait_only_briefly_for_the_lock() -> None:
    """The first write waits out the busy timeout and gets 503; while the pause lasts, the
    next write waits ``PAUSED_LOCK_WAIT_MS`` (the busy timeout in force for it), so a few
    sync workers are not all held by writes waiting behind a long lock; released, a write
    is stored at once."""
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from kb.ops.middleware import PAUSED_LOCK_WAIT_MS

    client = Client()
    with WriteLock():
        first = client.post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
        assert first.status_code == 503
        with CaptureQueriesContext(connection) as queries:
            second = client.post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
        assert second.status_code == 503
        assert second["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
    executed = [q["sql"] for q in queries]
    assert f"PRAGMA busy_timeout={PAUSED_LOCK_WAIT_MS}" in executed, executed
    assert PAUSED_LOCK_WAIT_MS <= 250
    with connection.cursor() as cursor:  # restored after the request
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == connection.settings_dict["OPTIONS"]["timeout"] * 1000
    third = client.post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
    assert third.status_code == 201, third.content[:500]
    assert Gap.objects.count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's read-only state")
@pytest.mark.usefixtures("writes_resume")
def test_a_read_only_postgresql_session_answers_writes_503_and_health_degraded() -> None:
    """``default_transaction_read_only``, as on a replica or during maintenance: the write
    fails with SQLSTATE 25006, answered 503 like SQLite's lock; the page still reads."""
    from django.test import Client

    record = make_record()
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION default_transaction_read_only = on")
    try:
        client = Client()
        write = client.post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
        health = client.get("/healthz")
        page = client.get(f"/records/{record.pk}/")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION default_transaction_read_only = off")
    assert write.status_code == 503, write.content[:500]
    assert write["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
    assert write.json()["status"] == 503
    assert health.status_code == 200
    assert health.json() == {
        "status": "degraded",
        "reason": "writes failing",
        "writes": "read-only",
    }
    assert page.status_code == 200
    assert not Gap.objects.exists()


@pytest.fixture
def cache_mended() -> Iterator[None]:
    from kb.ops.caching import forget_outages

    yield
    forget_outages()  # a lock marks the cache down in this process: later tests start up


@sqlite_only
@pytest.mark.usefixtures("cache_mended")
def test_a_page_that_fills_the_database_cache_waits_only_briefly_behind_the_lock() -> None:
    """The tag list's counts are cached per revision in the database cache: behind a long
    lock, storing them waits ``WRITE_LOCK_WAIT_MS`` (the busy timeout in force for that
    write), fails soft and the page answers, uncached; the connection keeps its own
    busy timeout."""
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from kb.ops.caching import WRITE_LOCK_WAIT_MS

    make_record()  # a new revision: nothing of it is cached yet
    with WriteLock(), CaptureQueriesContext(connection) as queries:
        response = Client().get("/tags/")
    assert response.status_code == 200
    executed = [q["sql"] for q in queries]
    assert f"PRAGMA busy_timeout={WRITE_LOCK_WAIT_MS}" in executed, executed
    assert WRITE_LOCK_WAIT_MS <= 250
    wait = executed.index(f"PRAGMA busy_timeout={WRITE_LOCK_WAIT_MS}")
    assert executed.index("BEGIN IMMEDIATE", wait) > wait  # the cache write, under that wait
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == connection.settings_dict["OPTIONS"]["timeout"] * 1000


PG_TABLE_LOCK = (
    "import psycopg, sys; c = psycopg.connect(sys.argv[1]);"
    "c.execute('LOCK TABLE kb_gap IN EXCLUSIVE MODE'); print('locked', flush=True);"
    "sys.stdin.read()"
)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's lock_timeout")
@pytest.mark.usefixtures("writes_resume")
def test_a_postgresql_write_behind_a_held_table_lock_answers_503_after_lock_timeout() -> None:
    """Another process holds a lock that blocks writes to the gaps table (as a long admin
    action or import holds row and table locks): the report waits ``lock_timeout`` (the
    setting in force on the connection, ``PG_LOCK_TIMEOUT``), then answers 503 with
    ``Retry-After`` instead of waiting until gunicorn kills the worker; reads answer."""
    import subprocess
    import sys

    from django.test import Client

    from tests.servers import database_url

    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "5s"
    record = make_record()
    holder = subprocess.Popen(
        [sys.executable, "-c", PG_TABLE_LOCK, database_url()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        client = Client()
        write = client.post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
        page = client.get(f"/records/{record.pk}/")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert write.status_code == 503, write.content[:500]
    assert write["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
    assert page.status_code == 200
    after = Client().post("/api/reports", {"text": UNKNOWN}, content_type="application/json")
    assert after.status_code == 201, after.content[:500]


@sqlite_only
@pytest.mark.urls("tests.urls_locked")
@pytest.mark.usefixtures("writes_resume")
def test_a_write_declined_outside_the_view_answers_503_too() -> None:
    """The session is saved by its middleware after the view returned: the error reaches
    the 500 handler, not the view's exception hook, and is still a 503 page."""
    from django.test import Client

    with WriteLock():
        response = Client(raise_request_exception=False).get("/__touch_session__/")
    assert response.status_code == 503
    assert response["Retry-After"] == str(WRITE_RETRY_AFTER_SECONDS)
    assert b"Saving is paused for a moment" in response.content
