"""Request limits, enforced before any body is read: body size everywhere, the rate limit
on the matching endpoints; and a write the database declines for now answered 503
(``WriteUnavailableMiddleware``, at the end).

Why a middleware: Django reads the body lazily, and the first reader of an oversized
request (CSRF, in ``process_view``) raises ``RequestDataTooBig``, which Django turns into a
bare 400. Checking ``Content-Length`` first answers 413 with a friendly message at once,
without buffering anything (the limit and its wording are ``kb.http``', the response is
``kb.http.refusal_response``, the one every view answers a refusal with). The rate
limit lives here for the same reason: a refused request costs one counter update, not a
session, CSRF check or match.

The counter is in the default cache, the database (``DatabaseCache``) or Redis
(``CACHE_URL``), so every gunicorn worker — and every host sharing it — counts in the same
place; per-process memory would multiply the limit by the number of workers. On the
database the read-modify-write runs in one transaction that serialises on the key (``BEGIN
IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL); on Redis it is one atomic
``INCRBY``: either way concurrent requests cannot lose increments. A cache that is down
(``kb.ops.caching``) lets requests through uncounted.

Charges follow cost (``CostCharge``, docs/reliability.md#r35-costs-and-proposals): a
request counts its body's units before it runs; a report or a proposal (which run the
redaction, the folding and a database write, far dearer per byte than a match) also counts
the CPU time its handling took, charged when it is done, beyond what it was charged up
front. And a JSON body nested deeper than ``KB_MAX_JSON_DEPTH`` is refused (400) here, on
every path, before anything parses it (``kb.http.too_deep``).

Match responses also get ``Cache-Control: no-store``: a paste may hold secrets, and its
result must not sit in a browser or proxy cache. Nothing here logs or keeps a body.
"""

from __future__ import annotations

import logging
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, router, transaction
from django.http import HttpRequest, HttpResponse
from django.views.debug import SafeExceptionReporterFilter

from kb.http import (
    TooLarge,
    check_body,
    client_address,
    no_store,
    pause_writes,
    rate_limited,
    refusal_response,
    too_deep,
    write_paused_response,
    write_unavailable,
    writes_paused,
)
from kb.ops.locks import brief_lock_wait

log = logging.getLogger(__name__)

# Paths whose POSTs run the matcher: rate-limited and never cached.
MATCH_PATHS = ("/match/", "/api/match")
RATE_WINDOW_SECONDS = 60
# The limiter's clock: windows follow wall-clock time, the same in every worker and host.
# Tests replace it to move between windows instead of waiting for one to end.
clock: Callable[[], float] = time.time
# What a request's handling cost, for the charges that follow it: this thread's CPU time
# (a threaded server's other requests are not this one's cost). Tests replace it.
cpu_clock: Callable[[], float] = time.thread_time
# How long a match waits for SQLite's write lock to count itself before giving up.
LIMITER_LOCK_WAIT_MS = 50
# How long a request waits for SQLite's write lock while this process has recently seen
# writes declined (WriteUnavailableMiddleware).
PAUSED_LOCK_WAIT_MS = 100


def _is_match_path(path: str) -> bool:
    return path in MATCH_PATHS or path.rstrip("/") == "/api/match"


def _increment(key: str, timeout: int, by: int = 1) -> int:
    """Add ``by`` to ``key`` in the default cache and return the new count, atomically
    across processes and hosts sharing the cache."""
    cache = caches["default"]
    if not isinstance(cache, DatabaseCache):
        # Redis: INCRBY is atomic; ``add`` starts the window's key with its expiry.
        cache.add(key, 0, timeout)
        try:
            return cache.incr(key, by)
        except ValueError:  # the key expired between the two calls: a fresh window
            cache.add(key, by, timeout)
            return by
    return _locked_increment(key, timeout, by)


def _locked_increment(key: str, timeout: int, by: int = 1) -> int:
    """Add ``by`` to ``key`` in the cache and return the new count, atomically across
    processes.

    A counter need not survive a power cut, so its commit skips the fsync that curated data
    gets (``synchronous=FULL`` stays for every other transaction): on SQLite the connection
    is switched to ``NORMAL`` around this one transaction, on PostgreSQL the transaction
    sets ``synchronous_commit`` off: that fsync would be the dearest part of a match
    request. On SQLite it also waits at most ``LIMITER_LOCK_WAIT_MS`` for the write lock: a
    long curator or import transaction makes the limiter skip a count, never the paste wait.
    """
    # no model: the routers' (or Django's) default alias; the stubs type only the model form
    db = router.db_for_write(None) or "default"  # type: ignore[arg-type]
    connection = connections[db]
    relax_sqlite = connection.vendor == "sqlite" and not connection.in_atomic_block
    busy_ms = 0
    if relax_sqlite:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout")
            busy_ms = int(cursor.fetchone()[0])
            # Wait briefly for the write lock: while a curator's edit or an import holds
            # it, count nothing (fail open, below) rather than make the paste wait.
            cursor.execute(f"PRAGMA busy_timeout={LIMITER_LOCK_WAIT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")
    try:
        with transaction.atomic(using=db):
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit TO OFF")
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [zlib.crc32(key.encode())])
            # On SQLite the transaction began IMMEDIATE: it holds the write lock already.
            # get + set (4 queries) rather than add + incr (up to 7).
            cache = caches["default"]
            count = int(cache.get(key, 0)) + by
            cache.set(key, count, timeout)
            return count
    finally:
        if relax_sqlite:
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA synchronous=FULL")
                cursor.execute(f"PRAGMA busy_timeout={busy_ms}")


# Clients this process has seen over the limit, per window: key -> the limit then in force.
# A count only grows within its window, so a client refused once stays refused until the
# window ends; remembering that here answers its further requests without a database write
# (a client hammering past its budget would otherwise cost one write per refusal).
_refused: dict[str, int] = {}
MAX_REMEMBERED_REFUSALS = 10_000


def forget_refusals() -> None:
    """Drop what this process remembers of refused clients (tests that reset the counters)."""
    _refused.clear()


def _retry_after(window: int, now: float) -> int:
    return max(1, int((window + 1) * RATE_WINDOW_SECONDS - now + 0.999))


def request_weight(request: HttpRequest, limit: int) -> int:
    """What a match request counts against the limit: one per started
    ``KB_RATE_LIMIT_UNIT_BYTES`` of body (an ordinary paste counts once, the largest paste
    several times), at most the whole limit (so a big log upload is still served in a fresh
    window). Matching costs CPU in proportion to the text, and so does the budget: a
    client sending only maximum-size pastes gets proportionally fewer a minute."""
    unit = max(1, settings.KB_RATE_LIMIT_UNIT_BYTES)
    try:
        length = max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        length = 0
    return min(limit, max(1, -(-length // unit)))


def rate_limit_hit(request: HttpRequest, *, by_cost: bool = False) -> int | None:
    """Count this request; return seconds to wait when over the limit, else ``None``.
    ``by_cost``: its handling's CPU time is charged too once it is done (``CostCharge``)."""
    limit = settings.KB_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None
    now = clock()
    window = int(now // RATE_WINDOW_SECONDS)
    key = f"kb:rl:match:{client_address(request)}:{window}"
    if _refused.get(key) == limit:
        return _retry_after(window, now)
    cache = caches["default"]
    if getattr(cache, "is_down", bool)():
        return None  # no counter for now (kb.ops.caching): an on-call tool must keep answering
    if writes_paused() and isinstance(cache, DatabaseCache):
        return None  # the database declines writes for now: count nothing, wait for nothing
    weight = request_weight(request, limit)
    try:
        count = _increment(key, RATE_WINDOW_SECONDS + 5, weight)
    except DatabaseError as exc:
        # No counter: let the request through rather than fail it. A write lock held by an
        # import skips counts until the pause lapses (kb.http.pause_writes); anything else
        # (the cache table gone) is an outage, which the cache logs once and then rests
        # from (kb.ops.caching).
        log.warning("rate limiter unavailable, request allowed: %s", type(exc).__name__)
        if write_unavailable(exc):
            pause_writes()
        elif hasattr(cache, "mark_down"):
            cache.mark_down(exc)
        return None
    if count <= limit:
        if by_cost:
            CostCharge(key=key, limit=limit, charged=weight, started=cpu_clock()).attach(request)
        return None
    _remember_refusal(key, limit)
    return _retry_after(window, now)


def _remember_refusal(key: str, limit: int) -> None:
    if len(_refused) >= MAX_REMEMBERED_REFUSALS:
        _refused.clear()  # bounded; old windows' entries are never consulted again
    _refused[key] = limit


@dataclass(frozen=True, slots=True)
class CostCharge:
    """What a request admitted ``by_cost`` owes once handled: the CPU time it took, one
    unit per started ``KB_RATE_LIMIT_CPU_UNIT_MS``, beyond the ``charged`` units its body
    counted up front, at most the whole ``limit`` (so the client is served again in the
    next window), added to the window's count it was admitted under (``key``).

    Why after, and by CPU: what a report costs depends on its text far more than on its
    size (a line of addresses or numbers costs the redaction many times a line of words),
    and on the redaction rules, which grow; the CPU time it took follows both. The body's
    units still count first, so a client past its budget is refused before any work. The
    price: a request that happens to do a process's shared work (the first to load a new
    matcher, for a report's nearest records) pays for it, at most the budget, once."""

    ATTR = "_kb_cost_charge"

    key: str
    limit: int
    charged: int
    started: float

    def attach(self, request: HttpRequest) -> None:
        setattr(request, self.ATTR, self)

    @classmethod
    def settle(cls, request: HttpRequest) -> None:
        """Charge what ``request``'s handling cost, if it was admitted by cost."""
        charge = getattr(request, cls.ATTR, None)
        unit_ms = settings.KB_RATE_LIMIT_CPU_UNIT_MS
        if not isinstance(charge, cls) or unit_ms <= 0:
            return
        spent_ms = max(0.0, cpu_clock() - charge.started) * 1000
        owed = min(charge.limit, math.ceil(spent_ms / unit_ms)) - charge.charged
        if owed <= 0:
            return
        if getattr(caches["default"], "is_down", bool)():
            return  # no counter for now, as when the request was admitted
        try:
            count = _increment(charge.key, RATE_WINDOW_SECONDS + 5, owed)
        except DatabaseError as exc:  # a count skipped, as rate_limit_hit skips one
            log.warning("rate limiter unavailable, cost not charged: %s", type(exc).__name__)
            return
        if count > charge.limit:
            _remember_refusal(charge.key, charge.limit)


def rate_limit_response(request: HttpRequest, *, by_cost: bool = False) -> HttpResponse | None:
    """Count this request; the 429 (with ``Retry-After``) when over the limit, else ``None``.
    For the match paths here, and for the views that share their budget (the learning
    loop's reports, votes and proposals; ``by_cost`` for reports and proposals)."""
    wait = rate_limit_hit(request, by_cost=by_cost)
    if wait is None:
        return None
    response = refusal_response(request, rate_limited(wait))
    response["Retry-After"] = str(wait)
    return response


class RequestLimitsMiddleware:
    """413 for oversized bodies, 400 for JSON nested too deep, 429 past the match rate
    limit, the cost of what was admitted by cost, no-store on match results."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Every response carries a nonce in its CSP, used or not: touching it makes Django's
        # CSP middleware put one in the header (docs/reliability.md#r3-csp-nonce).
        nonce = getattr(request, "_csp_nonce", None)
        if nonce is not None:
            str(nonce)
        response = self._limit(request)
        if response is None:
            response = self.get_response(request)
            CostCharge.settle(request)
        if _is_match_path(request.path) and "no-store" not in response.get("Cache-Control", ""):
            no_store(response)
        return response

    def _limit(self, request: HttpRequest) -> HttpResponse | None:
        try:
            check_body(request)
        except TooLarge as exc:
            return refusal_response(request, exc.refusal)
        refusal = too_deep(request)
        if refusal is not None:
            return refusal_response(request, refusal)
        if request.method == "POST" and _is_match_path(request.path):
            return rate_limit_response(request)
        return None


class WriteUnavailableMiddleware:
    """A write the database declines for now (locked past the busy timeout, or read-only:
    ``kb.http.write_unavailable``) answers 503 with ``Retry-After``, JSON under ``/api/``
    and the error page elsewhere, instead of a 500; any other error stays a 500.

    Here, in one place, for every view: ``process_exception`` sees what a view raised (the
    API's own handler, ``kb.api``, gives the same answer for what django-ninja catches
    first). Errors raised by other middleware (a session saved on the way out) reach the
    500 handler, which answers the same (``kb.http.server_error``).

    Once this process has seen a write declined (``kb.http.writes_paused``), its requests
    wait only ``PAUSED_LOCK_WAIT_MS`` for SQLite's write lock, not the busy timeout: with
    a few sync workers, every write waiting out the whole timeout behind a long lock would
    hold every worker and stall the reads and pastes too. The first write after the lock
    is released is served as usual, and the pause lapses by itself.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if writes_paused():
            with brief_lock_wait(connections[DEFAULT_DB_ALIAS], PAUSED_LOCK_WAIT_MS):
                return self.get_response(request)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return write_paused_response(request, exception)


class NoRequestBodyReporterFilter(SafeExceptionReporterFilter):
    """Error reports show no POST values at all: a paste can hold tokens and passwords."""

    def get_post_parameters(self, request: HttpRequest | None) -> dict[str, str]:
        if request is None:
            return {}
        try:
            keys = list(request.POST)
        except Exception:  # an unreadable body (too big, malformed): show nothing of it
            return {}
        return dict.fromkeys(keys, self.cleansed_substitute)
