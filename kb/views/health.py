"""``GET /healthz``: cheap and independent — one trivial query, no matching, no templates."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


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
