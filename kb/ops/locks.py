"""Waiting briefly for SQLite's write lock: one way for the code that must not wait out the
whole busy timeout (a health probe, requests while the database declines writes).

SQLite has one write lock for the whole database; a connection waits up to its busy
timeout for it (``SQLITE_BUSY_TIMEOUT``), right for a write queued behind another
request's short one, wrong behind an import or an open shell that holds it for minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db.backends.base.base import BaseDatabaseWrapper


@contextmanager
def brief_lock_wait(connection: BaseDatabaseWrapper, wait_ms: int) -> Iterator[None]:
    """Inside the block, ``connection`` waits at most ``wait_ms`` for the write lock; its
    busy timeout is restored after. Nothing changes on another database, or inside a
    transaction (the timeout of a transaction under way is its owner's to choose)."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        before = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
    try:
        yield
    finally:
        if connection.connection is not None:  # closed meanwhile: a new one starts afresh
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA busy_timeout={before}")
