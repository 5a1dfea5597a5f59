"""Placeholder: the record page (issue 4) is built here."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def record_detail(request: HttpRequest, record_id: str) -> HttpResponse:
    return HttpResponse("record page: not built yet", status=501)
