"""Placeholder: friendly error pages (400/403/404/500) are built here."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    return defaults.server_error(request)
