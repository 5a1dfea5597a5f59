"""Friendly error pages and refusals: plain words, a way back, never a stack trace.

An htmx request gets the ``kb/_error.html`` fragment instead of a whole page, so a results
area shows the message in place (400, 413 and 429 swap, see ``kb/_htmx_head.html``; other
statuses are shown by ``static/kb/app.js``). A refusal (``kb.limits.Refusal``: too large,
too many requests) is answered by ``refusal_response`` wherever it is decided, the
middleware included, so it reads the same from every door; the JSON API gets it as JSON.
The 500 view must work when little else does, so it falls back to a fixed string if even
its template fails to render.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from kb.http import no_store
from kb.limits import Refusal, TooLarge

log = logging.getLogger(__name__)

FALLBACK_500 = (
    "<!doctype html><title>Server error</title><h1>Something went wrong on our side</h1>"
    "<p>Please try again in a moment.</p>"
)


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request. Read from the header, not ``request.htmx``: the limits middleware
    answers before django-htmx's middleware has run."""
    return request.headers.get("HX-Request") == "true"


def _render(
    request: HttpRequest, template: str, status: int, context: dict[str, Any]
) -> HttpResponse:
    if wants_fragment(request):
        response = render(request, "kb/_error.html", {**context, "status": status}, status=status)
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request"])  # page or fragment, by request header
    return response


def refusal_response(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """JSON under ``/api/``, else the error fragment (htmx) or a page; never cached, since
    the request it answers may carry a paste."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(refusal.as_json(), status=refusal.status)
    else:
        response = _render(request, "refusal.html", refusal.status, {"refusal": refusal})
    return no_store(response)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):  # a body past Django's own field limit
        too_large = TooLarge("request", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return refusal_response(request, too_large.refusal)
    return _render(request, "400.html", 400, {})


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _render(request, "403.html", 403, {})


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _render(request, "404.html", 404, {})


def server_error(request: HttpRequest) -> HttpResponse:
    try:
        return _render(request, "500.html", 500, {})
    except Exception:  # the error page itself failed: answer with fixed text
        log.exception("500 page failed to render")
        return HttpResponseServerError(FALLBACK_500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """For ``CSRF_FAILURE_VIEW``: a stale form is the usual cause, so say to reload."""
    return _render(request, "403.html", 403, {"csrf": True})
