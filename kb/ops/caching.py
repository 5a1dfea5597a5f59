"""Cache backends that fail soft: the cache is an optimisation, never a dependency.

The shared cache (``settings.CACHES["default"]``: the database, or Redis with
``CACHE_URL``) is one of the classes here: Django's own backend with ``FailSafe`` in front,
so every call site (the browse selectors' counts, the rate limiter) degrades the same way
without a ``try`` of its own. The per-process caches (page fragments, explanations) are
Django's ``LocMemCache``: memory of this process, nothing there to be down.

When the backend fails (the database cache's table dropped, Redis stopped), a read is a
miss, a write is skipped, and the work is done uncached: the page answers, slower,
instead of a 500.

One log line per outage, not per call: after a failure the backend is marked down for
``RETRY_SECONDS`` in this process and calls return at once without trying (a Redis host
that times out would otherwise add its timeout to every call of every request); the first
call after that tries again, and a success says so in the log.

Inside a transaction the database cache does not swallow its error: on PostgreSQL a failed
statement aborts the caller's transaction, so the owner of that transaction (the rate
limiter's counter) must see the error and decide, rather than commit a broken transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.core.cache.backends import db, redis
from django.core.cache.backends.base import BaseCache
from django.db import DatabaseError, connections, router

from kb.http import write_unavailable
from kb.ops.locks import brief_lock_wait

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0


def _failures() -> tuple[type[BaseException], ...]:
    """What an unavailable backend raises (not what a misuse raises: ``ValueError`` from
    ``incr`` of a missing key still reaches the caller)."""
    errors: tuple[type[BaseException], ...] = (DatabaseError, OSError, EOFError)
    try:
        from redis.exceptions import RedisError
    except ImportError:  # Redis is optional: only CACHE_URL needs it
        return errors
    return (*errors, RedisError)


FAILURES = _failures()

# Backend (by class and location) -> the monotonic time until which it counts as down.
# Shared by the threads of one process: each has its own backend instance (Django's
# ``caches`` is per thread) but the outage is the same.
_down_until: dict[tuple[str, str], float] = {}
_lock = threading.Lock()
_inside = threading.local()
clock: Callable[[], float] = time.monotonic


def forget_outages() -> None:
    """Count every backend as up again (tests that break a cache on purpose, then mend it)."""
    with _lock:
        _down_until.clear()


class FailSafe(BaseCache):
    """Mixin for a Django cache backend: every operation survives the backend failing.

    Listed before the backend's class (``class X(FailSafe, db.DatabaseCache)``), so the
    ``super(FailSafe, self)`` calls below reach that backend; `BaseCache` as its base
    changes no method order and lets those calls be checked."""

    def _where(self) -> tuple[str, str]:
        return (type(self).__name__, str(getattr(self, "_kb_location", "")))

    def is_down(self) -> bool:
        """Whether a recent failure marked this backend down in this process."""
        return _down_until.get(self._where(), 0.0) > clock()

    def mark_down(self, exc: BaseException) -> None:
        """Record a failure: one warning per outage, then no calls until the retry time."""
        where = self._where()
        with _lock:
            was_up = where not in _down_until
            _down_until[where] = clock() + RETRY_SECONDS
        if not was_up:
            return
        declined = write_unavailable(exc)
        if declined:  # degraded, not broken: a long lock or a read-only database
            log.warning("cache %s: database %s, serving uncached", where[0], declined)
        else:
            log.warning(
                "cache %s unavailable, serving uncached: %s: %s",
                where[0],
                type(exc).__name__,
                str(exc).splitlines()[0][:200] if str(exc) else "",
            )

    def _mark_up(self) -> None:
        where = self._where()
        if where in _down_until:
            with _lock:
                if _down_until.pop(where, None) is not None:
                    log.warning("cache %s available again", where[0])

    def _in_transaction(self) -> bool:
        return False

    def _writing(self) -> AbstractContextManager[Any]:
        """Around a write operation (set, add, delete, …): a backend's own bounds."""
        return nullcontext()

    def _safely(self, fallback: Any, call: Callable[[], Any], *, write: bool = False) -> Any:
        # Django's backends build operations on each other (``get`` calls ``get_many``):
        # only the outermost one decides, so one failure is one outage, not a failure
        # inside and a success outside.
        if getattr(_inside, "call", False) or self._in_transaction():
            return call()  # the outer call (or the transaction's owner) handles the error
        if self.is_down():
            return fallback
        _inside.call = True
        try:
            with self._writing() if write else nullcontext():
                result = call()
        except FAILURES as exc:
            self.mark_down(exc)
            return fallback
        finally:
            _inside.call = False
        self._mark_up()
        return result

    # The operations Django's cache API defines; the rest (get_or_set, the async
    # variants) are built on these by ``BaseCache``. Writes say so (``_writing``).
    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._safely(default, lambda: super(FailSafe, self).get(key, default, version))

    # An unset timeout (``...``) is not passed on: the backend's own default applies.
    def set(self, key: Any, value: Any, timeout: Any = ..., version: Any = None) -> None:
        kw = _timeout(timeout)
        self._safely(
            None,
            lambda: super(FailSafe, self).set(key, value, version=version, **kw),
            write=True,
        )

    def add(self, key: Any, value: Any, timeout: Any = ..., version: Any = None) -> bool:
        kw = _timeout(timeout)
        return self._safely(
            False,
            lambda: super(FailSafe, self).add(key, value, version=version, **kw),
            write=True,
        )

    def touch(self, key: Any, timeout: Any = ..., version: Any = None) -> bool:
        kw = _timeout(timeout)
        return self._safely(
            False, lambda: super(FailSafe, self).touch(key, version=version, **kw), write=True
        )

    def delete(self, key: Any, version: Any = None) -> bool:
        return self._safely(False, lambda: super(FailSafe, self).delete(key, version), write=True)

    def has_key(self, key: Any, version: Any = None) -> bool:
        return self._safely(False, lambda: super(FailSafe, self).has_key(key, version))

    def get_many(self, keys: Any, version: Any = None) -> dict[Any, Any]:
        return self._safely({}, lambda: super(FailSafe, self).get_many(keys, version))

    def set_many(self, data: dict[Any, Any], timeout: Any = ..., version: Any = None) -> list:
        kw = _timeout(timeout)
        failed = list(data)  # a skipped write failed for every key
        return self._safely(
            failed,
            lambda: super(FailSafe, self).set_many(data, version=version, **kw),
            write=True,
        )

    def delete_many(self, keys: Any, version: Any = None) -> None:
        self._safely(None, lambda: super(FailSafe, self).delete_many(keys, version), write=True)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        """An unreachable counter counts afresh (``delta``): callers that limit on it
        let the request through rather than refuse it."""
        return self._safely(
            delta, lambda: super(FailSafe, self).incr(key, delta, version), write=True
        )

    def decr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        return self._safely(
            -delta, lambda: super(FailSafe, self).decr(key, delta, version), write=True
        )

    def clear(self) -> None:
        self._safely(None, lambda: super(FailSafe, self).clear(), write=True)


def _timeout(timeout: Any) -> dict[str, Any]:
    return {} if timeout is ... else {"timeout": timeout}


# How long a database cache write waits for SQLite's write lock: a cache entry is never
# worth a page waiting for an import or an open shell to commit.
WRITE_LOCK_WAIT_MS = 50


class DatabaseCache(FailSafe, db.DatabaseCache):
    """Django's database cache (shared by every process on the database), failing soft.

    A write waits at most ``WRITE_LOCK_WAIT_MS`` for SQLite's write lock, then fails soft
    like any outage: behind a long lock, a page that fills the cache (an uncached
    search's count) answers at once, uncached, instead of after the whole busy timeout
    (docs/reliability.md#r31-locked-database)."""

    def __init__(self, table: str, params: dict[str, Any]) -> None:
        super().__init__(table, params)
        self._kb_location = table

    def _connection(self) -> Any:
        return connections[router.db_for_write(self.cache_model_class)]

    def _in_transaction(self) -> bool:
        return bool(self._connection().in_atomic_block)

    def _writing(self) -> AbstractContextManager[Any]:
        return brief_lock_wait(self._connection(), WRITE_LOCK_WAIT_MS)


class RedisCache(FailSafe, redis.RedisCache):
    """Django's Redis cache (``CACHE_URL=redis://…``, shared across hosts), failing soft."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._kb_location = server
