"""Usage signals: which records pastes hit, and how many pastes matched nothing, per day.

Why a per-worker buffer: the paste path must not write to the database per paste (the
shared cache is the database too, so ``cache.incr`` would be that write). Each worker
counts in memory after the match (`count_match`) and writes the whole buffer as one
transaction of upserts (`flush`) when it is older than ``KB_USAGE_FLUSH_SECONDS`` or holds
more than `MAX_KEYS` counters -- checked in the same call, at the end of a paste request,
so there is no extra thread.

Nothing is lost silently. Every clean stop writes the buffer (`flush_at_exit`): gunicorn's
``worker_int`` and ``worker_exit`` hooks (``kb/gunicorn_conf.py``), and for any other server
that loads ``kb.wsgi`` (``manage.py runserver``) an ``atexit`` hook plus a ``SIGTERM`` handler
that writes the buffer before the signal's previous disposition takes effect. A flush that
fails keeps its counts for the next one; the last flush of a process has no next one, so
what it cannot write (database down or locked) is counted in ``kb_usage_counts_lost_total``
(``/metrics``) and logged with the number lost. Only a process killed outright (``SIGKILL``,
the OOM killer, a power cut) loses its unwritten counts unseen: at most one interval of one
worker's counts, acceptable for aggregates.

Nothing of the paste is kept: a hit is a record id and a day, a miss only a day. Counting
never fails a request: a failed flush keeps its counts for the next one and is logged
without any paste content.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime
from types import FrameType
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from kb.loop.models import UsageDay
from kb.ops.locks import brief_lock_wait
from kb.ops.metrics import USAGE_FLUSH_FAILURES, USAGE_LOST

__all__ = [
    "MAX_KEYS",
    "UsageBuffer",
    "buffer",
    "count_match",
    "flush",
    "flush_at_exit",
    "flush_on_exit",
]

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
        # Re-entrant: a stop signal's handler flushes in the main thread, which may have
        # been interrupted while it held the lock to count a paste.
        self._lock = threading.RLock()
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

    def flush(self, now: datetime | None = None, *, final: bool = False) -> int:
        """Write every buffered count (one transaction); returns the rows written. On a
        database error the counts go back into the buffer, unless this is the ``final``
        flush of a stopping process: then they are counted as lost and logged."""
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
        except Exception as exc:
            USAGE_FLUSH_FAILURES.inc()
            if final:
                lost = hits.total() + misses.total()
                USAGE_LOST.inc(lost)
                log.error(
                    "%d usage counts lost: the last flush before this process stops "
                    "could not write them (%s)",
                    lost,
                    type(exc).__name__,
                )
                return 0
            log.warning("usage counts not written, kept for the next flush: %s", type(exc).__name__)
            self._keep(hits, misses)
            # Wait a whole interval before trying again: retrying on every paste would
            # make each one wait for the lock that made this flush fail.
            with self._lock:
                self.since = now or self.clock()
            return 0
        except BaseException:
            # Interrupted before it committed (a second stop signal's SystemExit): the
            # counts go back, for the exit hook's flush that follows.
            self._keep(hits, misses)
            raise
        return len(rows)

    def _keep(self, hits: Counter[tuple[str, date]], misses: Counter[date]) -> None:
        with self._lock:
            self.hits.update(hits)
            self.misses.update(misses)
            if self.since is None:
                self.since = self.clock()


_TABLE = UsageDay._meta.db_table
_UPSERT_CHUNK = 500


def _upsert(rows: list[tuple[str, date, int, int]]) -> None:
    """Add the counts to the stored rows: ``INSERT ... ON CONFLICT DO UPDATE`` with the
    increment (SQLite and PostgreSQL both have it; Django's ``update_conflicts`` would
    overwrite the stored count instead of adding to it)."""
    adapt = connection.ops.adapt_datefield_value
    with (
        brief_lock_wait(connection, LOCK_WAIT_MS),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
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


def flush(now: datetime | None = None, *, final: bool = False) -> int:
    """Write this process's buffer now (tests, the bench; `flush_at_exit` at a stop)."""
    return buffer.flush(now, final=final)


#: The signals a stop is announced with; held back while the last flush writes.
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGQUIT})


def flush_at_exit() -> int:
    """The last flush of a stopping process: what it cannot write is counted as lost and
    logged. Stop signals wait until it is done (in a single-threaded process, such as a
    sync gunicorn worker; elsewhere they may still reach the main thread), so a second
    Ctrl-C or the arbiter's ``SIGQUIT`` does not cut the write short."""
    if connection.in_atomic_block:
        # The stop signal interrupted a request inside a transaction, which the stop rolls
        # back: written now, the counts would go with it. They stay for the exit hook
        # that runs once the request has unwound (gunicorn's ``worker_exit``, ``atexit``).
        return 0
    blocked = threading.current_thread() is threading.main_thread()
    if blocked:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return buffer.flush(final=True)
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


_installed_in: int | None = None  # the pid whose exit hooks are in place


def flush_on_exit() -> None:
    """Write the buffer when this process stops cleanly: at interpreter exit (``atexit``:
    a normal exit, ``sys.exit``, Ctrl-C's ``KeyboardInterrupt``) and on ``SIGTERM`` or
    ``SIGINT`` while their disposition is the default, which would end the process without
    either. Called by ``kb.wsgi``, so every server that loads the app (``runserver``
    included) has it; idempotent."""
    global _installed_in
    if _installed_in == os.getpid():
        return
    _installed_in = os.getpid()
    atexit.register(flush_at_exit)
    if threading.current_thread() is threading.main_thread():  # signal's own rule
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _chained(signal.getsignal(signum)))


def _chained(previous: Any) -> Callable[[int, FrameType | None], None]:
    """A handler that does what ``previous`` would have done, writing the buffer first
    when that is to end the process on the spot (the default disposition)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if callable(previous):
            # Another handler owns the stop (gunicorn's worker, the task worker): it ends
            # the process its own way, and ``atexit`` writes the buffer then; a write here
            # could land inside the request the signal interrupted.
            previous(signum, frame)
            return
        if previous == signal.SIG_IGN:
            return
        flush_at_exit()
        # The default action, as if this handler had never been there.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


def matched(*, result: Any, **_signal: Any) -> None:
    """Receiver of ``kb.matching.signals.text_matched``: count that paste's result."""
    count_match(result)
