"""The request type views are written against, and the one way a response is kept out of
every cache.

django-htmx's middleware sets ``request.htmx`` on every request; declaring it once here gives
every view the same typed request instead of each module declaring its own.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def no_store(response: HttpResponse) -> HttpResponse:
    """Neither the browser nor a proxy keeps ``response``: for answers to requests that may
    carry a paste, and for what people reported."""
    response["Cache-Control"] = "no-store"
    return response
