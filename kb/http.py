"""The request type views are written against.

django-htmx's middleware sets ``request.htmx`` on every request; declaring it once here gives
every view the same typed request instead of each module declaring its own.
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
