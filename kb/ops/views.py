"""The operator's endpoints: ``GET /healthz`` and ``GET /metrics``.

``/healthz`` is cheap and independent: one trivial read, no matching, no templates. It
answers 200 ``{"status": "ok"}`` when the database reads and takes writes, 200
``{"status": "degraded", "reason": "writes failing", "writes": "locked"}`` (or
``"read-only"``) when it reads but a write would fail now (a long import holding SQLite's
write lock, a read-only file or replica: pages and pastes still answer, writes get 503),
and 503 ``{"status": "unavailable"}`` when it cannot read. The write probe writes nothing
and waits at most ``PROBE_LOCK_WAIT_MS``.

``GET /metrics``: Prometheus's text format, for a scraper holding the bearer token.

Not public: the endpoint answers 404 until ``KB_METRICS_TOKEN`` is set, and then only to
``Authorization: Bearer <token>``. A token rather than "loopback only", because the
deployment puts a reverse proxy on the same host in front of gunicorn: every request,
from anywhere, then arrives from loopback, and an address check would let the world in.
A token holds wherever the request comes from; compared in constant time.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from kb.http import no_store, write_unavailable
from kb.ops.exposition import scrape
from kb.ops.locks import brief_lock_wait

# How long the write probe waits for SQLite's write lock: a health check must answer at
# once, and a lock held past this counts as "writes failing".
PROBE_LOCK_WAIT_MS = 100
# The probe's write: it needs the write lock and a writable database but changes nothing.
_PROBE_WRITE = "UPDATE kb_revision SET value = value WHERE 0 = 1"


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM kb_revision LIMIT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not healthy"
        return JsonResponse({"status": "unavailable", "error": type(exc).__name__}, status=503)
    try:
        failing = writes_failing()
    except Exception as exc:  # the read worked: the app serves, whatever the probe hit
        failing = type(exc).__name__
    if failing:
        return JsonResponse({"status": "degraded", "reason": "writes failing", "writes": failing})
    return JsonResponse({"status": "ok"})


def writes_failing() -> str | None:
    """Why a write would fail now (``kb.http.write_unavailable``: "locked", "read-only"),
    or ``None``: degraded, not down, since reads and pastes still answer.

    SQLite: take the write lock (``BEGIN IMMEDIATE``, waiting at most
    ``PROBE_LOCK_WAIT_MS``) and run a write that matches no row, then roll back: a
    read-only file lets ``BEGIN`` through and refuses only the write. PostgreSQL: a
    replica or a read-only default refuses writes; its locks are per row and table, so no
    one transaction blocks every write as SQLite's write lock does.
    """
    if connection.in_atomic_block:  # a test's transaction: a probe inside it proves nothing
        return None
    try:
        if connection.vendor == "sqlite":
            _probe_sqlite()
        elif connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'"
                )
                if cursor.fetchone()[0]:
                    return "read-only"
    except DatabaseError as exc:
        kind = write_unavailable(exc)
        if kind is None:
            raise
        return kind
    return None


def _probe_sqlite() -> None:
    with brief_lock_wait(connection, PROBE_LOCK_WAIT_MS), connection.cursor() as cursor:
        cursor.execute("BEGIN IMMEDIATE")
        try:
            cursor.execute(_PROBE_WRITE)
        finally:
            cursor.execute("ROLLBACK")


def authorised(request: HttpRequest, token: str) -> bool:
    supplied = request.headers.get("Authorization", "")
    return hmac.compare_digest(supplied.encode(), f"Bearer {token}".encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.KB_METRICS_TOKEN
    if not token:
        raise Http404("metrics are turned off")
    if not authorised(request, token):
        response = HttpResponse(
            "a bearer token is required\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return no_store(response)
    return no_store(HttpResponse(scrape(), content_type=CONTENT_TYPE_LATEST))
