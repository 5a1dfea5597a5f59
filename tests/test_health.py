"""``/healthz`` is cheap, checks the database, and says 503 when it can't
(docs/reliability.md#r23-health-check).

Cheap is asserted as work done, one query and no template or matcher, not as a time:
its latency is measured by benchmarks/bench_pages.py.
"""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_healthz_answers_200_with_a_database_check(client: Client) -> None:
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_runs_one_query_and_no_template_or_matcher(
    client: Client, django_assert_num_queries: object
) -> None:
    from kb.matching import holder as matching

    with (
        mock.patch.object(matching, "get_matcher", side_effect=AssertionError("matched")),
        mock.patch("django.template.loader.get_template", side_effect=AssertionError("tpl")),
        django_assert_num_queries(1),
    ):
        response = client.get(reverse("healthz"))
    assert response.status_code == 200


def test_healthz_is_never_cached(client: Client) -> None:
    response = client.get(reverse("healthz"))
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]


def test_healthz_answers_503_when_the_database_is_unavailable(client: Client) -> None:
    from django.db.utils import OperationalError

    with mock.patch.object(
        connection, "cursor", side_effect=OperationalError("unable to open database file")
    ):
        response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert "unable to open" not in response.content.decode()  # no internals leaked


def test_healthz_refuses_post(client: Client) -> None:
    assert client.post(reverse("healthz")).status_code == 405


def test_healthz_answers_503_when_the_database_file_path_is_broken(tmp_path: object) -> None:
    """A real process whose DATABASE_URL points into a directory that does not exist."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import django, json; django.setup();"
        "from django.test import Client;"
        "r = Client().get('/healthz');"
        "print(json.dumps([r.status_code, r.json()]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kb.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/missing-dir/kb.sqlite3",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip(), result.stderr[-3000:]
    status, body = json.loads(result.stdout.strip().splitlines()[-1])
    assert status == 503, result.stderr
    assert body["status"] == "unavailable"


# --- Degraded, not down: reads work, writes fail (docs/reliability.md#r31-locked-database)
sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write lock")


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_healthz_says_degraded_while_another_process_holds_the_write_lock_and_ok_after() -> None:
    from tests.locks import WriteLock

    with WriteLock():
        during = Client().get(reverse("healthz"))
    assert during.status_code == 200  # the app reads its database (CONTRACT)
    assert during.json() == {"status": "degraded", "reason": "writes failing", "writes": "locked"}
    after = Client().get(reverse("healthz"))
    assert after.json() == {"status": "ok"}


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_healthz_says_degraded_on_a_read_only_database() -> None:
    """``query_only`` makes SQLite refuse every write, as a read-only file does."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only=1")
    try:
        response = Client().get(reverse("healthz"))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA query_only=0")
    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "reason": "writes failing",
        "writes": "read-only",
    }


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_healthz_write_probe_waits_briefly_and_writes_nothing() -> None:
    """The probe waits ``PROBE_LOCK_WAIT_MS`` for the lock, not the busy timeout, rolls
    back, and leaves the connection's busy timeout as it found it."""
    from django.test.utils import CaptureQueriesContext

    from kb.ops.views import PROBE_LOCK_WAIT_MS

    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        before = cursor.fetchone()[0]
    with CaptureQueriesContext(connection) as queries:
        assert Client().get(reverse("healthz")).json() == {"status": "ok"}
    executed = [q["sql"] for q in queries]
    assert f"PRAGMA busy_timeout={PROBE_LOCK_WAIT_MS}" in executed, executed
    assert PROBE_LOCK_WAIT_MS <= 250
    assert executed.index("BEGIN IMMEDIATE") < executed.index("ROLLBACK")
    assert "COMMIT" not in executed
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] == before
