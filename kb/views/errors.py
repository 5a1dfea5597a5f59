"""Friendly error pages (400/403/404/500): plain words, a way back, never a stack trace.

An htmx request gets a small fragment instead of a whole page, so a results area shows
the message in place (400 is configured to swap in ``base.html``; other statuses are
shown by ``static/kb/app.js``). The 500 view must work when little else does, so it
falls back to a fixed string if even its template fails to render.
"""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseServerError
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

log = logging.getLogger(__name__)

FALLBACK_500 = (
    "<!doctype html><title>Server error</title><h1>Something went wrong on our side</h1>"
    "<p>Please try again in a moment.</p>"
)


def _render(request: HttpRequest, template: str, status: int, context: dict) -> HttpResponse:
    if getattr(request, "htmx", False):
        response = render(request, "kb/_error.html", {**context, "status": status}, status=status)
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request"])  # page or fragment, by request header
    return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    too_big = isinstance(exception, RequestDataTooBig)
    return _render(request, "400.html", 400, {"too_big": too_big})


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
