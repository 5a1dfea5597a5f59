"""Read side of the browse pages and their JSON twins: tags, tag pages, filtered lists.

The HTML views (``kb.views.browse``) and the API (``kb.api``) both call these selectors, so a
page and its JSON twin always agree on what is listed, in which order, on which page.

Speed with the full dataset (16.7k records, 60k tag rows) comes from three choices:
- pages are paginated on ids, then only the page's rows are loaded with the columns a list
  shows (``LIST_FIELDS``): a record's source and analysis text can be kilobytes, and the
  covering indexes of ``kb.search_index.BROWSE_INDEXES`` answer counts and order without them;
- a tag page drives its query from the tag's index rows (``CROSS JOIN`` fixes that join
  order on SQLite, which has no statistics unless ``ANALYZE`` ran; PostgreSQL ignores it);
- aggregates over everything (tag counts, facet combinations) are cached per record
  revision: every write that matters bumps it (``kb.models.next_revision``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, QuerySet

from kb.filters import Facet, RecordFilter, facet_combos, facets_from_combos, narrowing_params
from kb.models import ErrorRecord, RecordTag, Status, Tag, current_revision

PAGE_SIZE = 25
TAG_PAGE_SIZE = 120
MAX_PAGE_SIZE = 100
CACHE_SECONDS = 600
SEARCH_LIMIT = 10_000  # ranked results listed at most (the best come first)

LIST_FIELDS = (
    "id",
    "repo",
    "slug",
    "error_message",
    "error_class",
    "error_code",
    "error_type",
    "severity",
    "handling_strategy",
    "tags",
    "status",
)


@dataclass(frozen=True, slots=True)
class TagCount:
    name: str
    count: int


@dataclass(slots=True)
class RecordListing:
    """One page of a filtered record list, with what the page and its twin show around it."""

    page: Page
    filterset: RecordFilter
    params: dict[str, str]
    facets: list[Facet]

    @property
    def searched(self) -> bool:
        return bool(self.params.get("q"))


def clean_params(data: Mapping[str, Any], allowed: tuple[str, ...]) -> dict[str, str]:
    """The non-empty, known parameters of a request (for links, cache keys, JSON echoes)."""
    out: dict[str, str] = {}
    for key in allowed:
        value = data.get(key)
        if value is not None and str(value).strip():
            out[key] = str(value).strip()
    return out


def paginate(items: Any, page_number: Any, per_page: int = PAGE_SIZE) -> Page:
    """A page, never an error: out-of-range or junk page numbers give the nearest page."""
    return Paginator(items, per_page, allow_empty_first_page=True).get_page(page_number)


def _load_rows(page: Page) -> Page:
    ids = list(page.object_list)
    rows = ErrorRecord.objects.only(*LIST_FIELDS).in_bulk(ids)
    page.object_list = [rows[pk] for pk in ids if pk in rows]
    return page


def paginate_records(
    queryset: QuerySet[ErrorRecord], page_number: Any, per_page: int = PAGE_SIZE
) -> Page:
    """Paginate ids (count and order from the indexes), then load the page's rows only."""
    return _load_rows(paginate(queryset.values_list("pk", flat=True), page_number, per_page))


def _cached(kind: str, key_data: Any, compute: Any) -> Any:
    digest = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:32]
    key = f"kb:{kind}:{current_revision()}:{digest}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, CACHE_SECONDS)
    return value


# --- tags ----------------------------------------------------------------------------------


def _count_tags() -> list[tuple[str, int]]:
    """Counted from the index rows of published records, grouped by tag id, names looked
    up after: the status test is answered by a covering index (``kb_record_listing``),
    never by the wide record rows, and no ``DISTINCT`` is needed since a record carries a
    tag once (``kb_recordtag_unique``). An annotated ``LEFT JOIN`` from tags with
    ``COUNT(DISTINCT ...)`` took 185-270 ms at 16.7k records; this takes 31-44 ms.
    """
    counts = (
        RecordTag.objects.filter(record__status=Status.PUBLISHED)
        .values_list("tag_id")
        .annotate(n=Count("*"))
        .order_by()
    )
    names = dict(Tag.objects.values_list("id", "name"))
    return sorted(((names[tag], n) for tag, n in counts), key=lambda row: (-row[1], row[0]))


def _tag_rows() -> list[tuple[str, int]]:
    """(name, published record count), most used first; cached per revision."""
    return _cached(
        "tag-counts",
        None,
        _count_tags,
    )


def all_tag_counts() -> list[TagCount]:
    """Every tag with its number of published records, most used first (cached)."""
    return [TagCount(name, count) for name, count in _tag_rows()]


def tag_count_map() -> dict[str, int]:
    """Tag name -> number of published records (cached per revision)."""
    return dict(_tag_rows())


def tag_counts(*, query: str = "", order: str = "count") -> list[TagCount]:
    rows = _tag_rows()
    needle = query.strip().casefold()
    if needle:
        rows = [row for row in rows if needle in row[0].casefold()]
    if order == "name":
        rows = sorted(rows)
    return [TagCount(name, count) for name, count in rows]


def get_tag(name: str) -> Tag | None:
    if "\x00" in name:  # PostgreSQL refuses NUL in text: no tag can have one
        return None
    return Tag.objects.filter(name=name).first()


class _TagRecordIds:
    """The ids of a tag's published records in list order, sliceable for ``Paginator``."""

    _FROM = (
        "FROM kb_recordtag rt CROSS JOIN kb_errorrecord r "
        "WHERE r.id = rt.record_id AND rt.tag_id = %s AND r.status = %s"
    )

    def __init__(self, tag: Tag, known_count: int | None = None) -> None:
        self.params = [tag.pk, Status.PUBLISHED]
        self.known_count = known_count

    def count(self) -> int:
        if self.known_count is not None:
            return self.known_count
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) {self._FROM}", self.params)
            return int(cursor.fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, key: slice) -> list[str]:
        start = key.start or 0
        limit = (key.stop - start) if key.stop is not None else 2**62  # no "LIMIT -1" on PG
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT r.id {self._FROM} ORDER BY r.repo, r.slug, r.id LIMIT %s OFFSET %s",
                [*self.params, limit, start],
            )
            return [row[0] for row in cursor.fetchall()]


def tag_page(tag: Tag, page_number: Any, per_page: int = PAGE_SIZE) -> Page:
    """One page of the published records carrying ``tag``, in list order.

    The count is cached per revision (a popular tag has thousands of rows to count).
    """
    ids = _TagRecordIds(tag)
    ids.known_count = _cached("tag-count", tag.pk, ids.count)
    return _load_rows(paginate(ids, page_number, per_page))


def tag_records(tag: Tag) -> QuerySet[ErrorRecord]:
    """The same records as a queryset (for callers that filter further)."""
    return ErrorRecord.objects.published().filter(recordtag__tag=tag)


# --- filtered, searchable record lists -----------------------------------------------------


def published_records() -> QuerySet[ErrorRecord]:
    return ErrorRecord.objects.published()


# The parameters a record list is a function of (the filterset's, with q and tag).
RECORD_PARAMS = tuple(RecordFilter.base_filters)


def record_listing(
    data: Mapping[str, Any],
    *,
    page_size: int = PAGE_SIZE,
    with_facets: bool = True,
    page_number: Any = None,
) -> RecordListing:
    """Filter, search and paginate published records as ``data`` (GET parameters) asks.

    ``page_number`` overrides ``data["page"]`` (a caller that keys a cache on the page
    must render the page it keyed: ``paginate`` turns ``0`` into the last page).
    """
    base = published_records()
    filterset = RecordFilter(data, queryset=base)
    params = clean_params(data, RECORD_PARAMS)
    number = data.get("page") if page_number is None else page_number
    if params.get("q"):
        # A ranked search: one pass for the ordered ids (the count is their number)
        # instead of a count pass and a page pass over the full-text index.
        ids = list(filterset.qs.values_list("pk", flat=True)[:SEARCH_LIMIT])
        page = _load_rows(paginate(ids, number, page_size))
    else:
        page = paginate_records(filterset.qs, number, page_size)
    facets: list[Facet] = []
    if with_facets:
        narrowing = clean_params(narrowing_params(params), RECORD_PARAMS)
        combos = _cached("facets", narrowing, lambda: facet_combos(narrowing, base))
        facets = facets_from_combos(combos, params)
    return RecordListing(page=page, filterset=filterset, params=params, facets=facets)


def visible_record(record_id: str) -> ErrorRecord | None:
    """A record anyone may read (published or retired; drafts are staff-only)."""
    if "\x00" in record_id:  # PostgreSQL refuses NUL in text: no id can have one
        return None
    return ErrorRecord.objects.exclude(status=Status.DRAFT).filter(pk=record_id).first()
