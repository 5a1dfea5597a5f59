"""The JSON API (django-ninja): one ``NinjaAPI`` under ``/api/``, made of each app's router.

- ``POST /api/match``: ``kb.matching.api``;
- ``GET /api/records``, ``/api/records/{id}``, ``/api/tags``, ``/api/tags/{tag}``, the
  JSON twins of the browse pages: ``kb.browse.api``;
- ``/api/reports``, ``/api/feedback``, ``/api/proposals``, ``/api/gaps``: ``kb.loop.api``;
- ``/api/openapi.json`` is the schema; ``/api/docs`` renders it as a plain HTML page (no
  Swagger bundle from a CDN, no script: the site's CSP stays strict).

Writes are same-origin JSON only (``same_origin_json_writes``,
docs/reliability.md#r33-same-origin-writes). The API takes no session and no CSRF token,
so what keeps another site from writing through a visitor's browser is what a browser
cannot do without asking: a cross-origin ``fetch()`` or form may send ``text/plain``,
``application/x-www-form-urlencoded`` or ``multipart/form-data`` with no preflight, never
``application/json``; and every browser tells where a request comes from (``Origin``,
``Sec-Fetch-Site``), which a page cannot forge. So an API write (``POST``, ``PUT``,
``PATCH``, ``DELETE``) takes ``application/json`` only (415 otherwise) and is refused (403)
when a browser says it comes from another origin. Clients that are not browsers (``curl``,
CI, scripts) send neither header and are served as before. ``POST /api/match`` is a read
(it changes nothing) and keeps taking JSON, ``text/plain`` and form bodies from anywhere,
as the contract says.

A write the database declines for now (locked, read-only) answers 503 with ``Retry-After``
and the JSON refusal, from any endpoint (``database_error``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import DocsBase
from ninja.operation import Operation

from kb.browse.api import router as browse_router
from kb.http import Refusal, refusal_response, write_paused_response
from kb.loop.api import router as loop_router
from kb.matching.api import router as match_router


class HtmlDocs(DocsBase):
    """The OpenAPI schema as a server-rendered page: readable without JavaScript."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        schema = api.get_openapi_schema(path_params=kwargs)
        operations = [
            {
                "method": method.upper(),
                "path": path,
                "summary": op.get("summary", ""),
                "description": op.get("description", ""),
                "parameters": op.get("parameters", []),
                "body": list(op.get("requestBody", {}).get("content", {})),
                "responses": sorted(op.get("responses", {})),
            }
            for path, item in schema["paths"].items()
            for method, op in item.items()
        ]
        context = {
            "api": api,
            "operations": operations,
            "schema_url": self.get_openapi_url(api, kwargs),
        }
        return render(request, "kb/browse/api_docs.html", context)


class KnowledgeBaseAPI(NinjaAPI):
    """Operation ids that do not follow the code around: django-ninja derives them from the
    view's module, and clients generated from the schema call operations by id. Each app's
    router keeps the id its operations were first published under."""

    PUBLISHED_PREFIX = {
        "kb.matching.api": "kb_api",
        "kb.browse.api": "kb_api",
        "kb.loop.api": "kb_api_loop",
    }

    def get_openapi_operation_id(self, operation: Operation) -> str:
        prefix = self.PUBLISHED_PREFIX.get(operation.view_func.__module__)
        if prefix is None:
            return super().get_openapi_operation_id(operation)
        return f"{prefix}_{operation.view_func.__name__}"


WRITE_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
#: Operations (by ``url_name``) that take a POST but change nothing: open to any origin and
#: any of their media types (``POST /api/match``: JSON, ``text/plain`` or a form field).
READS_BY_POST = frozenset(("match",))
#: What ``Sec-Fetch-Site`` says for a request made by the site's own pages or typed by the
#: person (``none``: the address bar, a bookmark); ``same-site`` and ``cross-site`` are
#: other origins (another port or subdomain is another origin).
OWN_FETCH_SITES = frozenset(("same-origin", "none"))


def from_other_origin(request: HttpRequest) -> bool:
    """Whether a browser says this request comes from a page of another origin.

    ``Origin``, when sent, decides: the site's own origin and ``CSRF_TRUSTED_ORIGINS`` pass
    (Django's CSRF rule), anything else, ``null`` included, is another origin. Without it,
    ``Sec-Fetch-Site`` decides (``same-origin`` and ``none`` pass). Without either the
    client is not a browser, or one too old to send them on a write: it passes, as the
    API's non-browser clients must.
    """
    if "HTTP_ORIGIN" in request.META:
        # Django's own rule for the ``Origin`` a form post may come from, so the API trusts
        # exactly the origins the forms trust (made per request: it caches the setting). A
        # private method, untyped in the stubs; the tests of trusted origins pin it.
        csrf = CsrfViewMiddleware(lambda request: HttpResponse())
        return not csrf._origin_verified(request)  # type: ignore[attr-defined]
    site = request.headers.get("Sec-Fetch-Site")
    return site is not None and site.strip().lower() not in OWN_FETCH_SITES


def write_refusal(request: HttpRequest) -> Refusal | None:
    """Why this API request may not write, or ``None``: another origin (403), a body that
    is not ``application/json`` (415). Reads and ``READS_BY_POST`` always pass."""
    if request.method not in WRITE_METHODS:
        return None
    match = request.resolver_match
    if match is not None and match.url_name in READS_BY_POST:
        return None
    if from_other_origin(request):
        return Refusal(
            403,
            "Cross-site request refused",
            "The API takes writes from this site's own pages and from clients that are not "
            "browsers; a page of another site cannot write through a visitor's browser.",
        )
    if request.content_type != "application/json":
        sent = request.content_type or "a body without a Content-Type"
        return Refusal(
            415, "Unsupported media type", f"Send the body as application/json, not {sent}."
        )
    return None


def same_origin_json_writes(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap an operation so that ``write_refusal`` answers before the body is parsed, the
    rate limit counted or anything stored."""

    @wraps(run)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = write_refusal(request)
        if refusal is not None:
            return refusal_response(request, refusal)
        return run(request, *args, **kwargs)

    return checked


api = KnowledgeBaseAPI(
    title="Error knowledge base API",
    version="1",
    description="Match pasted logs against known errors; browse records and tags as JSON.",
    docs=HtmlDocs(),
)


def database_error(request: HttpRequest, exc: DatabaseError | type[DatabaseError]) -> HttpResponse:
    """A write the database declines for now is a 503 with ``Retry-After`` and the JSON
    refusal (``kb.http.write_paused_response``); any other database error goes on to
    Django, as django-ninja's default does (a 500). (django-ninja passes the instance; its
    type hints allow the class too.)"""
    response = write_paused_response(request, exc) if isinstance(exc, DatabaseError) else None
    if response is None:
        raise exc
    return response


api.add_exception_handler(DatabaseError, database_error)

# The routes of each app, in the order the schema lists them.
api.add_router("", loop_router)  # /api/reports, /api/feedback, /api/proposals, /api/gaps
api.add_router("", match_router)  # /api/match
api.add_router("", browse_router)  # /api/records, /api/tags
# Before validation ("view"), on every operation of every router.
api.add_decorator(same_origin_json_writes, mode="view")

__all__ = ["api"]
