"""The JSON twins of the browse pages.

``GET /api/records``, ``/api/records/{id}``, ``/api/tags``, ``/api/tags/{tag}`` return what
``/records/``, ``/records/<id>/``, ``/tags/`` and ``/tags/<tag>/`` show, through the same
selectors (``kb.browse.selectors``): same filters, order and pages.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from ninja import Query, Router
from ninja import Status as Reply

from kb.browse.releases import record_releases
from kb.browse.schemas import RecordFilters, RecordPage, TagDetail, TagPage
from kb.browse.selectors import (
    TAG_PAGE_SIZE,
    get_tag,
    paginate,
    record_listing,
    tag_counts,
    tag_page,
    visible_record,
)
from kb.http import ErrorOut, ValidationOut
from kb.records.links import record_url, tag_url
from kb.records.models import ErrorRecord

router = Router()


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


@router.get(
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
        "releases": listing.releases,
        "release": listing.release.releases if listing.release else None,
        "release_error": listing.release_error or None,
        "more_found": listing.more_found,
    }


@router.get(
    "/records/{record_id}",
    response={200: dict[str, Any], 404: ErrorOut},
    summary="One record in the dataset's shape (published or retired)",
    url_name="record",
)
def record(request: HttpRequest, record_id: str) -> Any:
    found = visible_record(record_id, request.user)
    if found is None:
        return Reply(404, {"detail": "No such record"})
    releases = record_releases(found)
    return {
        **found.as_dict(),
        "status": found.status,
        "url": record_url(found.pk),
        # what the page shows of its releases (null for a record without history)
        "releases": releases.as_json() if releases else None,
    }


@router.get(
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


@router.get(
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
