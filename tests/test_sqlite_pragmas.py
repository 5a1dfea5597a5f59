"""RELIABILITY #19: the SQLite pragmas that make concurrent, durable writes safe are in force.

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


def test_busy_timeout_lets_writers_wait() -> None:
    assert int(_pragma("busy_timeout")) >= 5000


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
    from kb.middleware import _locked_increment

    assert _locked_increment("pragma-test", 60) >= 1
    assert _pragma("synchronous") == 2
