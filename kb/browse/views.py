"""Browsing: the tag index, a tag's records, and the filtered, searchable record list.

Each view is one URL serving two things: the whole page (a first visit, a reload, a link
opened without JavaScript, htmx's history restore) and, for an htmx request, only the part
that changes (``{% partialdef %}`` in the same template), so pagination and filtering swap
a fragment and push the URL: back, forward and reload all land on the same content.
Every ``hx-get`` link is also a real ``href``, and the filters are a plain GET form.
The data comes from ``kb.browse.selectors`` (shared with the JSON twins in ``kb.api``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlencode

from django.core.paginator import Page
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import push_url

from kb.browse.filters import FACETS
from kb.browse.selectors import (
    RECORD_PARAMS,
    TAG_PAGE_SIZE,
    RecordListing,
    clean_params,
    get_tag,
    paginate,
    record_listing,
    tag_counts,
    tag_page,
)
from kb.http import HtmxHttpRequest
from kb.records.links import record_url, tag_links, tag_url
from kb.records.models import current_revision

LABELS = {
    "q": "Search",
    "tag": "Tag",
    "release": "Release",
    **{param: label for param, _f, label in FACETS},
}


@dataclass(frozen=True, slots=True)
class PageLink:
    number: int | None  # None: an ellipsis
    url: str
    current: bool = False


def _template(request: HtmxHttpRequest, name: str, partial: str) -> str:
    """The fragment for htmx swaps; the whole page otherwise (incl. history restores)."""
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request:
        return f"{name}#{partial}"
    return name


def _push_clean_url(
    request: HtmxHttpRequest, response: HttpResponse, path: str, params: dict[str, str], page: int
) -> HttpResponse:
    """A GET form sends its empty fields too; the history entry gets the tidy URL instead."""
    if getattr(request, "htmx", None) and response.status_code == 200:
        push_url(response, _url(path, params, page))
    return response


def _url(path: str, params: dict[str, str], page: int | None = None) -> str:
    query = dict(params)
    query.pop("page", None)
    if page and page > 1:
        query["page"] = str(page)
    return f"{path}?{urlencode(query)}" if query else path


def fragment_key(params: dict[str, str], page: int) -> str:
    """What a browse fragment is a function of: the data revision and the (cleaned) query.

    The fragments hold no per-user content (only published records are listed, and the
    forms are GETs without a CSRF token), so one rendering serves everyone until the next
    change takes a new revision. The views hand the template their costly values lazily
    (``SimpleLazyObject``): a cached fragment computes none of them.
    """
    return f"{current_revision()}|{urlencode(sorted(params.items()))}|{page}"


def asked_page(request: HttpRequest) -> int:
    """The page number asked for (1 for junk); the paginator clamps it to the last page."""
    raw = request.GET.get("page", "")
    return int(raw) if raw.isdigit() and 0 < int(raw) < 10**6 else 1


def pagination(page: Page, path: str, params: dict[str, str]) -> dict[str, Any]:
    """Links for the pagination partial: previous, numbered (elided), next."""
    links = [
        PageLink(None, "")
        if n == page.paginator.ELLIPSIS
        else PageLink(int(n), _url(path, params, int(n)), int(n) == page.number)
        for n in page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
    ]
    return {
        "page": page,
        "links": links if page.paginator.num_pages > 1 else [],
        "prev_url": _url(path, params, page.previous_page_number()) if page.has_previous() else "",
        "next_url": _url(path, params, page.next_page_number()) if page.has_next() else "",
    }


MESSAGE_CHARS = 240


def decorate_rows(records: Iterable[Any]) -> Iterable[Any]:
    """Give each row its ``url``, ``short_message`` and ``tag_links`` [(name, url)].

    From the row's own fields only (no queries), in Python rather than per-row template
    filters: rendering is most of a list page's time. (Rows are `ErrorRecord`s, typed
    ``Any``: the model does not declare these display attributes.)
    """
    for record in records:
        message = record.error_message or ""
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 1] + "\u2026"
        record.short_message = message
        record.url = record_url(record.pk)
        record.tag_links = tag_links(record.tags)
    return records


@require_safe
@vary_on_headers("HX-Request", "HX-History-Restore-Request")
def tag_list(request: HtmxHttpRequest) -> HttpResponse:
    params = clean_params(request.GET, ("q", "sort"))
    order = "name" if params.get("sort") == "name" else "count"
    number = asked_page(request)
    path = reverse("tag_list")

    def results() -> dict[str, Any]:
        tags = tag_counts(query=params.get("q", ""), order=order)
        page = paginate(tags, number, TAG_PAGE_SIZE)
        return {
            "page": page,
            "tags": [(t.name, t.count, tag_url(t.name)) for t in page.object_list],
            "total": len(tags),
            "pager": pagination(page, path, params),
        }

    context = {
        "results": SimpleLazyObject(results),
        "params": params,
        "order": order,
        "by_count_url": _url(path, {k: v for k, v in params.items() if k != "sort"}),
        "by_name_url": _url(path, {**params, "sort": "name"}),
        "target": "tag-results",
        "fragment_key": fragment_key(params, number),
    }
    response = render(request, _template(request, "kb/browse/tag_list.html", "results"), context)
    return _push_clean_url(request, response, path, params, number)


@require_safe
@vary_on_headers("HX-Request", "HX-History-Restore-Request")
def tag_detail(request: HtmxHttpRequest, tag: str) -> HttpResponse:
    tag_obj = get_tag(tag)
    if tag_obj is None:
        raise Http404("No such tag")
    number = asked_page(request)
    path = tag_url(tag_obj.name)

    def records() -> Page:
        found = tag_page(tag_obj, number)
        decorate_rows(found.object_list)
        return found

    page = SimpleLazyObject(records)
    context = {
        "tag": tag_obj,
        "page": page,
        # the lazy object stands in for the Page it builds
        "pager": SimpleLazyObject(lambda: pagination(cast(Page, page), path, {})),
        "filter_url": _url(reverse("record_list"), {"tag": tag_obj.name}),
        "target": "tag-records",
        "fragment_key": fragment_key({"tag": tag_obj.name}, number),
    }
    return render(request, _template(request, "kb/browse/tag_detail.html", "results"), context)


@require_safe
@vary_on_headers("HX-Request", "HX-History-Restore-Request")
def record_list(request: HtmxHttpRequest) -> HttpResponse:
    params = clean_params(request.GET, RECORD_PARAMS)
    number = asked_page(request)
    path = reverse("record_list")

    def listing() -> RecordListing:
        found = record_listing(request.GET, page_number=number)
        decorate_rows(found.page.object_list)
        return found

    lazy = SimpleLazyObject(listing)
    context = {
        "listing": lazy,
        "page": SimpleLazyObject(lambda: lazy.page),
        "params": params,
        "facets": SimpleLazyObject(lambda: lazy.facets),
        "pager": SimpleLazyObject(lambda: pagination(lazy.page, path, params)),
        "clear_url": path,
        "active": [
            (LABELS.get(key, key), value, _url(path, {k: v for k, v in params.items() if k != key}))
            for key, value in params.items()
        ],
        "target": "browse",
        "fragment_key": fragment_key(params, number),
    }
    response = render(request, _template(request, "kb/browse/record_list.html", "browse"), context)
    return _push_clean_url(request, response, path, params, number)
