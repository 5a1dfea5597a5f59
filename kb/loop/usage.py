"""Usage signals: which records pastes hit, and how many pastes matched nothing, per day.

Why a per-worker buffer: the paste path must not write to the database per paste (the
shared cache is the database too, so ``cache.incr`` would be that write). Each worker
counts in memory after the match (`count_match`) and writes the whole buffer as one
transaction of upserts (`flush`) when it is older than ``KB_USAGE_FLUSH_SECONDS`` or holds
more than `MAX_KEYS` counters -- checked in the same call, at the end of a paste request,
so there is no extra thread -- and at worker exit (``kb.gunicorn_conf.worker_exit``). A
crash loses at most one interval of one worker's counts: acceptable for aggregates.

Nothing of the paste is kept: a hit is a record id and a day, a miss only a day. Counting
never fails a request: a failed flush keeps its counts for the next one and is logged
without any paste content.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from kb.loop.models import UsageDay

__all__ = ["MAX_KEYS", "UsageBuffer", "buffer", "count_match", "flush"]

log = logging.getLogger(__name__)

#: Past this many distinct (record, day) counters a buffer is written whatever its age.
MAX_KEYS = 10_000
#: The misses of a day are stored under this record id.
MISS = ""
# How long a flush waits for SQLite's write lock before giving up until the next interval.
LOCK_WAIT_MS = 50


class UsageBuffer:
    """One worker's unwritten counts; ``clock`` gives the current time (tests inject it)."""

    def __init__(self, clock: Callable[[], datetime] = timezone.now) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self.hits: Counter[tuple[str, date]] = Counter()
        self.misses: Counter[date] = Counter()
        self.since: datetime | None = None  # when the oldest unwritten count was made

    def reset(self) -> None:
        """Drop the unwritten counts (tests start each with an empty buffer)."""
        with self._lock:
            self.hits, self.misses, self.since = Counter(), Counter(), None

    def __len__(self) -> int:
        return len(self.hits) + len(self.misses)

    def count(self, record_ids: set[str], now: datetime | None = None) -> None:
        """One paste: a hit for each record it confidently matched, else one miss."""
        now = now or self.clock()
        day = timezone.localdate(now)
        with self._lock:
            if record_ids:
                self.hits.update((rid, day) for rid in record_ids)
            else:
                self.misses[day] += 1
            if self.since is None:
                self.since = now

    def due(self, now: datetime | None = None) -> bool:
        if self.since is None:
            return False
        age = ((now or self.clock()) - self.since).total_seconds()
        return age >= settings.KB_USAGE_FLUSH_SECONDS or len(self) > MAX_KEYS

    def flush(self, now: datetime | None = None) -> int:
        """Write every buffered count (one transaction); returns the rows written. On a
        database error the counts go back into the buffer."""
        with self._lock:
            hits, misses = self.hits, self.misses
            self.hits, self.misses = Counter(), Counter()
            self.since = None
        rows = [(rid, day, n, 0) for (rid, day), n in hits.items()]
        rows += [(MISS, day, 0, n) for day, n in misses.items()]
        if not rows:
            return 0
        # One order for every worker, so two flushes of overlapping keys never lock rows in
        # opposite orders (a deadlock PostgreSQL would settle by aborting one of them).
        rows.sort()
        try:
            _upsert(rows)
        except DatabaseError as exc:
            log.warning("usage counts not written, kept for the next flush: %s", type(exc).__name__)
            with self._lock:
                self.hits.update(hits)
                self.misses.update(misses)
                # Wait a whole interval before trying again: retrying on every paste would
                # make each one wait for the lock that made this flush fail.
                self.since = now or self.clock()
            return 0
        return len(rows)


_TABLE = UsageDay._meta.db_table
_UPSERT_CHUNK = 500


def _upsert(rows: list[tuple[str, date, int, int]]) -> None:
    """Add the counts to the stored rows: ``INSERT ... ON CONFLICT DO UPDATE`` with the
    increment (SQLite and PostgreSQL both have it; Django's ``update_conflicts`` would
    overwrite the stored count instead of adding to it)."""
    adapt = connection.ops.adapt_datefield_value
    with _brief_lock_wait(), transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(rows), _UPSERT_CHUNK):
            chunk = rows[start : start + _UPSERT_CHUNK]
            values = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
            params: list[Any] = []
            for rid, day, hits, misses in chunk:
                params += [rid, adapt(day), hits, misses]
            # The table name is the model's; every value is a parameter.
            cursor.execute(
                f"INSERT INTO {_TABLE} (record_id, day, hits, misses) VALUES {values} "
                "ON CONFLICT (record_id, day) DO UPDATE SET "
                f"hits = {_TABLE}.hits + excluded.hits, misses = {_TABLE}.misses + excluded.misses",
                params,
            )


@contextmanager
def _brief_lock_wait() -> Iterator[None]:
    """On SQLite, wait at most `LOCK_WAIT_MS` for the write lock: while an import or a
    curator's edit holds it, this flush fails (its counts are kept) instead of making the
    paste that triggered it wait."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        before = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA busy_timeout={LOCK_WAIT_MS}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout={before}")


#: This process's buffer.
buffer = UsageBuffer()


def count_match(result: Any, now: datetime | None = None) -> None:
    """Count one paste's result (a `kb.matching.holder.MatchResult`) and write the buffer when
    due. Never raises: usage is a by-product, never a reason to fail a paste."""
    if not settings.KB_USAGE_ENABLED:
        return
    try:
        buffer.count({m.record.pk for m in result.matches}, now)
        if buffer.due(now):
            buffer.flush(now)
    except Exception as exc:  # a by-product must never fail the request it counts
        log.warning("usage not counted: %s", type(exc).__name__)


def flush(now: datetime | None = None) -> int:
    """Write this process's buffer now (worker exit, tests, the bench)."""
    return buffer.flush(now)


def matched(*, result: Any, **_signal: Any) -> None:
    """Receiver of ``kb.matching.signals.text_matched``: count that paste's result."""
    count_match(result)
