"""Placeholder: the paste page and its match partial (issue 4) are built here."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def paste_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("paste page: not built yet", status=501)


def match_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("match: not built yet", status=501)
