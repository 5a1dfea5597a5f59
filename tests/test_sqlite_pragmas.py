"""The SQLite pragmas that make concurrent, durable writes safe are in force
(docs/reliability.md#r19-sqlite-pragmas).

WAL lets readers run beside the writer; ``synchronous=FULL`` (2) fsyncs each commit so an
acknowledged edit survives a crash; foreign keys are enforced; ``BEGIN IMMEDIATE`` takes the
write lock up front so writers queue on ``busy_timeout`` rather than fail mid-transaction.
"""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite-only pragmas"),
]


def _pragma(name: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA {name}")
        return cursor.fetchone()[0]


def test_journal_mode_is_wal() -> None:
    assert str(_pragma("journal_mode")).lower() == "wal"


def test_synchronous_is_full() -> None:
    assert _pragma("synchronous") == 2


def test_foreign_keys_are_enforced() -> None:
    assert _pragma("foreign_keys") == 1


def test_busy_timeout_lets_writers_wait_a_few_seconds_then_fail() -> None:
    """Long enough to queue behind another request's write, short enough that a lock held
    by an import or an open shell answers a request 503 within a few seconds
    (docs/reliability.md#r31-locked-database) rather than tying up a sync worker."""
    configured = connection.settings_dict["OPTIONS"]["timeout"]
    assert int(_pragma("busy_timeout")) == int(configured * 1000)
    assert 1000 <= int(_pragma("busy_timeout")) <= 5000


def test_transactions_begin_immediate() -> None:
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert connection.transaction_mode == "IMMEDIATE"


def test_database_is_a_real_file_not_memory() -> None:
    name = str(connection.settings_dict["NAME"])
    assert name.endswith(".sqlite3")
    assert ":memory:" not in name
    assert "mode=memory" not in name


@pytest.mark.django_db(transaction=True)
def test_rate_limit_counter_leaves_the_connection_at_synchronous_full(settings: object) -> None:
    """The counter's own commit skips the fsync; every other transaction keeps FULL."""
    from kb.ops.middleware import _locked_increment

    assert _locked_increment("pragma-test", 60) >= 1
    assert _pragma("synchronous") == 2
    assert int(_pragma("busy_timeout")) >= 5000


@pytest.mark.django_db(transaction=True)
def test_rate_limiter_does_not_wait_for_a_long_write_lock(
    settings: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the write lock until the match has been answered: the match is
    let through uncounted, so it gave up on the lock instead of waiting for its release,
    and it waited only ``LIMITER_LOCK_WAIT_MS``, not the connection's busy timeout."""
    import subprocess
    import sys

    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from kb.ops.middleware import LIMITER_LOCK_WAIT_MS
    from tests.servers import ROOT, app_env

    settings.KB_RATE_LIMIT_PER_MINUTE = 5
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()",
            str(connection.settings_dict["NAME"]),
        ],
        cwd=ROOT,
        env=app_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with CaptureQueriesContext(connection) as queries:
            response = Client().post("/api/match", {"text": "x"}, content_type="application/json")
    finally:
        holder.kill()
        holder.wait()
    assert response.status_code == 200
    assert "rate limiter unavailable" in caplog.text
    executed = [q["sql"] for q in queries]
    assert f"PRAGMA busy_timeout={LIMITER_LOCK_WAIT_MS}" in executed, executed
    assert int(_pragma("busy_timeout")) >= 5000


def test_a_new_database_takes_16k_pages() -> None:
    """Set before the first table (``init_command``): a record's few kilobytes fit a page,
    without overflow pages to chase on every read of a column after ``source_code``."""
    assert _pragma("page_size") == 16384
