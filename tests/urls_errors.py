"""The app's URLs plus a view that always fails, to see the real 500 path (tests only)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from kb.urls import handler400, handler403, handler404, handler500, urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("forced failure with SECRET_SETTING_VALUE inside")


urlpatterns = [path("__boom__/", boom), *urlpatterns]
