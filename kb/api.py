"""The JSON API (django-ninja): one ``NinjaAPI`` under ``/api/``, made of each app's router.

- ``POST /api/match``: ``kb.matching.api``;
- ``GET /api/records``, ``/api/records/{id}``, ``/api/tags``, ``/api/tags/{tag}``, the
  JSON twins of the browse pages: ``kb.browse.api``;
- ``/api/reports``, ``/api/feedback``, ``/api/proposals``, ``/api/gaps``: ``kb.loop.api``;
- ``/api/openapi.json`` is the schema; ``/api/docs`` renders it as a plain HTML page (no
  Swagger bundle from a CDN, no script: the site's CSP stays strict).

A write the database declines for now (locked, read-only) answers 503 with ``Retry-After``
and the JSON refusal, from any endpoint (``database_error``).
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import DocsBase
from ninja.operation import Operation

from kb.browse.api import router as browse_router
from kb.http import write_paused_response
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

__all__ = ["api"]
