"""The JSON API (django-ninja): matching for tools, and a JSON twin of every browse page.

- ``POST /api/match`` answers exactly ``kb.matching.match_text(text).as_json()``, the object
  ``manage.py match --json`` prints (the matching contract), for a JSON body ``{"text": "..."}``, a
  ``text/plain`` body, or a form field ``text``. It changes no state, so it takes no
  session and needs no CSRF token (django-ninja checks CSRF only for cookie-based auth,
  and this API has none): CI jobs and scripts call it with a bare ``curl``. Abuse is bounded
  by ``kb.middleware`` (body size, per-client rate limit); results are ``no-store``.
  ``?format=text|github|markdown`` answers the same result printed as ``manage.py match
  --format`` prints it (``kb.report_formats``), as ``text/plain``, so a client such as
  ``contrib/kb_match.py`` needs no renderer; every answer carries ``KB-Known-Errors`` (the
  number of distinct known errors) for the client's exit status.
- ``GET /api/records``, ``/api/records/{id}``, ``/api/tags``, ``/api/tags/{tag}`` return
  what ``/records/``, ``/records/<id>/``, ``/tags/`` and ``/tags/<tag>/`` show, through the
  same selectors (``kb.browse.selectors``): same filters, order and pages.
- ``/api/openapi.json`` is the schema; ``/api/docs`` renders it as a plain HTML page (no
  Swagger bundle from a CDN, no script: the site's CSP stays strict).
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Page
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from ninja import NinjaAPI, Query
from ninja import Status as Reply
from ninja.openapi.docs import DocsBase

from kb.api.loop import router as loop_router
from kb.api.schemas import (
    ErrorOut,
    MatchIn,
    MatchOut,
    RecordFilters,
    RecordPage,
    RefusalOut,
    TagDetail,
    TagPage,
    ValidationOut,
)
from kb.browse.links import record_url, tag_url
from kb.browse.selectors import (
    TAG_PAGE_SIZE,
    get_tag,
    paginate,
    record_listing,
    tag_counts,
    tag_page,
    visible_record,
)
from kb.http import no_store
from kb.limits import Refusal, TooLarge, from_matcher
from kb.loop.usage import count_match
from kb.models import ErrorRecord
from kb.views.errors import refusal_response


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


api = NinjaAPI(
    title="Error knowledge base API",
    version="1",
    description="Match pasted logs against known errors; browse records and tags as JSON.",
    docs=HtmlDocs(),
)

api.add_router("", loop_router)  # /api/reports, /api/feedback, /api/proposals, /api/gaps

# --- helpers ---------------------------------------------------------------------------------


def _row(record: ErrorRecord) -> dict[str, Any]:
    return {
        "id": record.pk,
        "slug": record.slug,
        "repo": record.repo,
        "error_message": record.error_message,
        "error_class": record.error_class,
        "error_code": record.error_code,
        "error_type": record.error_type,
        "severity": record.severity,
        "handling_strategy": record.handling_strategy,
        "tags": [str(t) for t in (record.tags or [])],
        "url": record_url(record.pk),
        "api_url": _api_url("api-1:record", record.pk),
    }


def _api_url(name: str, arg: str) -> str:
    try:
        return reverse(name, args=[arg])
    except NoReverseMatch:
        return ""


def _page_url(request: HttpRequest, number: int) -> str:
    query = request.GET.copy()
    query["page"] = str(number)
    return f"{request.path}?{query.urlencode()}"


def _page_meta(request: HttpRequest, page: Page) -> dict[str, Any]:
    return {
        "count": page.paginator.count,
        "page": page.number,
        "pages": page.paginator.num_pages,
        "page_size": page.paginator.per_page,
        "next": _page_url(request, page.next_page_number()) if page.has_next() else None,
        "previous": _page_url(request, page.previous_page_number())
        if page.has_previous()
        else None,
    }


# --- matching ------------------------------------------------------------------------------

MATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": MatchIn.model_json_schema()},
            "text/plain": {"schema": {"type": "string", "minLength": 1}},
            "application/x-www-form-urlencoded": {"schema": MatchIn.model_json_schema()},
        },
    }
}


MATCH_TEXT_FORMATS = "^(json|text|github|markdown)$"
MATCH_RESPONSES = {
    "responses": {
        200: {
            "description": "The result: JSON by default, text/plain for the other formats",
            "headers": {
                "KB-Known-Errors": {
                    "description": "Distinct known errors found (0: none); a CI client's "
                    "exit status",
                    "schema": {"type": "integer", "minimum": 0},
                }
            },
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
}


def _refuse(request: HttpRequest, status: int, title: str, detail: str) -> HttpResponse:
    """A match request refused for its body: the same JSON as a too-large or rate-limited
    one (``kb.limits.Refusal``), so a tool reads every refusal one way."""
    return refusal_response(request, Refusal(status, title, detail))


def _charset(name: str | None) -> str:
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:  # a made-up charset: read it as UTF-8
        return "utf-8"


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class Unsupported(ValueError):
    """A body in a media type this endpoint does not take (415)."""


def _paste_text(request: HttpRequest) -> str:
    """The text to match from a JSON, form or plain-text body.

    Raises ``ValueError`` (400) for a missing or malformed body, ``Unsupported`` (415) for
    another media type: a tool that sends the wrong thing learns it, instead of getting
    "no known error" for text it never meant to send.
    """
    content_type = request.content_type or ""
    if not request.body:
        raise ValueError('Send the text to match: JSON {"text": "..."} or a text/plain body.')
    if content_type == "application/json":
        try:
            data = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            raise ValueError('The body is not valid JSON; send {"text": "..."}.') from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ValueError('Send a JSON object with a string field "text".')
        return data["text"]
    if content_type in FORM_TYPES:
        text = request.POST.get("text")
        if text is None:
            raise ValueError('Send the text in a form field named "text".')
        return text
    if content_type == "text/plain":
        return request.body.decode(_charset(request.encoding), errors="replace")
    raise Unsupported(
        "Send application/json, text/plain or a form field named text, not "
        f"{content_type or 'a body without a Content-Type'}."
    )


@api.post(
    "/match",
    response={
        200: MatchOut,
        400: RefusalOut,
        413: RefusalOut,
        415: RefusalOut,
        422: ValidationOut,
        429: RefusalOut,
    },
    summary="Match a paste against every active record",
    description=(
        'Body: JSON {"text": "..."}, text/plain, or a form field `text` (e.g. '
        "`curl --data-urlencode text@app.log`). Answers the object of "
        "`manage.py match --json`: confident matches best first, then suggestions. "
        "`?format=text|github|markdown` answers that result as `manage.py match --format` "
        "prints it (text/plain); `file` names the log in the github annotations."
    ),
    openapi_extra={**MATCH_BODY, **MATCH_RESPONSES},
    url_name="match",
)
def match(
    request: HttpRequest,
    format: str = Query("json", pattern=MATCH_TEXT_FORMATS),
    file: str = Query("", max_length=1000),
) -> HttpResponse:
    from kb.matcher import PasteTooLarge
    from kb.matching import match_text
    from kb.report_formats import known_count, render
    from kb.report_formats.data import report_data

    try:
        text = _paste_text(request)
    except RequestDataTooBig:  # a multipart text field past Django's field limit
        return refusal_response(request, TooLarge("paste", settings.KB_MAX_PASTE_BYTES).refusal)
    except Unsupported as exc:
        return _refuse(request, 415, "Unsupported media type", str(exc))
    except ValueError as exc:
        return _refuse(request, 400, "Bad request", str(exc))
    try:
        result = match_text(text, max_bytes=settings.KB_MAX_PASTE_BYTES)
    except PasteTooLarge as exc:
        return refusal_response(request, from_matcher(exc).refusal)
    count_match(result)  # usage signals: counted in memory, never fails the match
    if format == "json":
        data = result.as_json()
        response: HttpResponse = JsonResponse(data)
    else:
        data = report_data(result, text, absolute=request.build_absolute_uri)
        body = render(format, data, file=file or None)
        response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    response["KB-Known-Errors"] = str(known_count(data))
    return no_store(response)


# --- browse twins ---------------------------------------------------------------------------


@api.get(
    "/records",
    response={200: RecordPage, 422: ValidationOut},
    summary="Published records: filter, search, page",
)
def records(request: HttpRequest, filters: Query[RecordFilters]) -> dict[str, Any]:
    data = {k: v for k, v in filters.dict().items() if k not in ("page_size", "facets")}
    data["page"] = str(filters.page)
    listing = record_listing(data, page_size=filters.page_size, with_facets=filters.facets)
    return {
        **_page_meta(request, listing.page),
        "params": listing.params,
        "items": [_row(r) for r in listing.page.object_list],
        "facets": listing.facets,
    }


@api.get(
    "/records/{record_id}",
    response={200: dict[str, Any], 404: ErrorOut},
    summary="One record in the dataset's shape (published or retired)",
    url_name="record",
)
def record(request: HttpRequest, record_id: str) -> Any:
    found = visible_record(record_id, request.user)
    if found is None:
        return Reply(404, {"detail": "No such record"})
    return {**found.as_dict(), "status": found.status, "url": record_url(found.pk)}


@api.get(
    "/tags",
    response={200: TagPage, 422: ValidationOut},
    summary="Tags with their number of published records",
)
def tags(
    request: HttpRequest,
    q: str = "",
    sort: str = Query("count", pattern="^(count|name)$"),
    page: int = Query(1, ge=1),
) -> dict[str, Any]:
    found = tag_counts(query=q, order=sort)
    tag_page_ = paginate(found, page, TAG_PAGE_SIZE)
    return {
        **_page_meta(request, tag_page_),
        "items": [
            {
                "name": t.name,
                "count": t.count,
                "url": tag_url(t.name),
                "api_url": _api_url("api-1:tag", t.name),
            }
            for t in tag_page_.object_list
        ],
    }


@api.get(
    "/tags/{tag}",
    response={200: TagDetail, 404: ErrorOut, 422: ValidationOut},
    summary="The published records carrying a tag",
    url_name="tag",
)
def tag(request: HttpRequest, tag: str, page: int = Query(1, ge=1)) -> Any:
    found = get_tag(tag)
    if found is None:
        return Reply(404, {"detail": "No such tag"})
    records_page = tag_page(found, page)
    return {
        "tag": found.name,
        "url": tag_url(found.name),
        **_page_meta(request, records_page),
        "items": [_row(r) for r in records_page.object_list],
    }


__all__ = ["api"]
