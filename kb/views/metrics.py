"""``GET /metrics``: Prometheus's text format, for a scraper holding the bearer token.

Not public: the endpoint answers 404 until ``KB_METRICS_TOKEN`` is set, and then only to
``Authorization: Bearer <token>``. A token rather than "loopback only", because the
deployment puts a reverse proxy on the same host in front of gunicorn: every request,
from anywhere, then arrives from loopback, and an address check would let the world in.
A token holds wherever the request comes from; compared in constant time.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from kb.http import no_store
from kb.metrics.exposition import scrape


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
