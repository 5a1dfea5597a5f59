"""Placeholder: browsing by tag and facets, and search (issue 4) are built here."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def record_list(request: HttpRequest) -> HttpResponse:
    return HttpResponse("records: not built yet", status=501)


def tag_list(request: HttpRequest) -> HttpResponse:
    return HttpResponse("tags: not built yet", status=501)


def tag_detail(request: HttpRequest, tag: str) -> HttpResponse:
    return HttpResponse("tag: not built yet", status=501)
