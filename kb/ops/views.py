"""The operator's endpoints: ``GET /healthz`` and ``GET /metrics``.

``/healthz`` is cheap and independent: one trivial query, no matching, no templates.

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
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from kb.http import no_store
from kb.ops.exposition import scrape


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM kb_revision LIMIT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not healthy"
        return JsonResponse({"status": "unavailable", "error": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok"})


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
