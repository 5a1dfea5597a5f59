"""The app's URLs plus a view whose only write is its session, saved by the session
middleware on the way out, after the view: the path a declined write takes outside any
view (tests/test_locked_database.py)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from kb.urls import handler400, handler403, handler404, handler500, urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


def touch_session(request: HttpRequest) -> HttpResponse:
    request.session["touched"] = True
    return HttpResponse("ok")


urlpatterns = [path("__touch_session__/", touch_session), *urlpatterns]
