"""Read side of the browse pages and their JSON twins: tags, tag pages, filtered lists.

The HTML views (``kb.browse.views``) and the API (``kb.api``) both call these selectors, so a
page and its JSON twin always agree on what is listed, in which order, on which page.
Lists show published records only (``ErrorRecord.objects.published()``); a record opened
by id follows ``visible_to(user)``.

Speed with the full dataset comes from three choices:
- pages are paginated on ids, then only the page's rows are loaded with the columns a list
  shows (``LIST_FIELDS``): a record's source and analysis text can be kilobytes, and the
  covering indexes ``kb_record_listing`` and ``kb_record_browse`` (``ErrorRecord.Meta``)
  answer counts and order without them;
- a tag page lists from the tag's index rows or along the list order, whichever reads
  less for that page (``_TagRecordIds``: SQLite has no statistics to choose by), with its
  count cached per revision: Django's ``Paginator`` over ``tag_records`` would count and
  order through every tagged row on each page (``benchmarks/page_layers.py`` compares the
  two);
- aggregates over everything (tag counts, facet combinations) are cached per record
  revision: every write that matters bumps it (``kb.records.models.next_revision``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, QuerySet

from kb.browse.filters import (
    FACET_PARAMS,
    Facet,
    RecordFilter,
    facet_combos,
    facets_from_combos,
    narrowing_params,
)
from kb.browse.releases import (
    ReleaseError,
    ReleaseScope,
    in_release,
    release_scope,
    series,
    stored_release_names,
)
from kb.browse.search import SEARCH_RANKED, first_found, rank_found
from kb.records.models import ErrorRecord, Status, Tag, current_revision

PAGE_SIZE = 25
TAG_PAGE_SIZE = 120
MAX_PAGE_SIZE = 100
CACHE_SECONDS = 600

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
    release: ReleaseScope | None = None  # the release filter, when one is asked and known
    release_error: str = ""  # why the release asked for lists nothing
    releases: list[str] = field(default_factory=list)  # the chosen repository's, oldest first
    more_found: bool = False  # a search found more than the SEARCH_RANKED it lists

    @property
    def release_choices(self) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        """The release filter's options, (group, [(value, label, selected)]): each series
        (``1.4.x``), then each release, newest first (the likeliest asked for)."""
        chosen = self.release.label if self.release else ""
        groups = [
            ("Series", [(f"{s}.x", f"{s}.x", f"{s}.x" == chosen) for s in series(self.releases)]),
            ("Releases", [(n, n, n == chosen) for n in self.releases]),
        ]
        return [(name, options[::-1]) for name, options in groups if options]

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


def per_revision(kind: str, key_data: Any, compute: Any) -> Any:
    """``compute()``, cached (default cache, ``CACHE_SECONDS``) under the current record
    revision, ``kind`` and ``key_data``: a new revision computes it afresh."""
    digest = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:32]
    key = f"kb:{kind}:{current_revision()}:{digest}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, CACHE_SECONDS)
    return value


# --- tags ----------------------------------------------------------------------------------


# Tag rows counted from the tag index alone, less the rows of the records that are not
# published (usually few, found through the status index), in one statement (one snapshot).
_COUNT_ONE_TAG = """
    SELECT (SELECT COUNT(*) FROM kb_recordtag WHERE tag_id = %s) - (
        SELECT COUNT(*) FROM kb_recordtag rt INNER JOIN kb_errorrecord r ON rt.record_id = r.id
        WHERE rt.tag_id = %s AND r.status IN ({hidden})
    )
"""
_COUNT_TAGS = """
    SELECT t.name, c.n FROM (
        SELECT u.tag_id, SUM(u.n) AS n FROM (
            SELECT tag_id, COUNT(*) AS n FROM kb_recordtag GROUP BY tag_id{less}
        ) u GROUP BY u.tag_id
    ) c INNER JOIN kb_tag t ON t.id = c.tag_id WHERE c.n > 0
"""
_LESS_HIDDEN = """
            UNION ALL
            SELECT rt.tag_id, -COUNT(*) FROM kb_recordtag rt
            INNER JOIN kb_errorrecord r ON rt.record_id = r.id
            WHERE r.status IN ({hidden}) GROUP BY rt.tag_id"""


def count_tags_sql(hidden: list[str]) -> str:
    """The statement of ``count_tags``: tag rows less those of records in ``hidden``
    statuses (one ``%s`` parameter each)."""
    less = _LESS_HIDDEN.format(hidden=_placeholders(hidden)) if hidden else ""
    return _COUNT_TAGS.format(less=less)


def count_tags(*, published_only: bool = True) -> list[tuple[str, int]]:
    """(name, records carrying it) for each tag in use, most used first (then by name, in
    code point order on every backend): published records only (the site's tag index),
    or records of every status (the admin's tag filter).

    What the first request after a write computes (callers cache it per revision), so it
    reads the tag index once and joins to records only for the unpublished ones, which
    are few: joining every tag row to its record's status, or the annotated ``LEFT JOIN``
    with ``COUNT(DISTINCT ...)``, reads every record row (``benchmarks/bench_pages.py``
    times this one against the latter; figures in ``docs/performance.md``).
    """
    hidden = _hidden_statuses() if published_only else []
    with connection.cursor() as cursor:
        cursor.execute(count_tags_sql(hidden), hidden)
        rows = [(name, int(n)) for name, n in cursor.fetchall()]  # SUM: NUMERIC on PostgreSQL
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def _count_tag(tag: Tag) -> int:
    """The tag's published records, the same way for one tag: its index rows counted, less
    its unpublished records, instead of joining each of its rows to its record."""
    hidden = _hidden_statuses()
    with connection.cursor() as cursor:
        sql = _COUNT_ONE_TAG.format(hidden=_placeholders(hidden))
        cursor.execute(sql, [tag.pk, tag.pk, *hidden])
        return int(cursor.fetchone()[0])


def _hidden_statuses() -> list[str]:
    return [status.value for status in Status if status != Status.PUBLISHED]


def _placeholders(values: list[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def _tag_rows() -> list[tuple[str, int]]:
    """(name, published record count), most used first; cached per revision."""
    return per_revision("tag-counts", None, count_tags)


@dataclass(frozen=True, slots=True)
class Coverage:
    """A repository the matcher knows errors of, and how many of its records it matches."""

    repo: str
    records: int


def _count_repositories() -> list[tuple[str, int]]:
    rows = (
        ErrorRecord.objects.active()
        .exclude(repo="")  # records reported from the field name no repository
        .values_list("repo")
        .annotate(n=Count("id"))
        .order_by("-n", "repo")
    )
    return [(repo, n) for repo, n in rows]


def covered_repositories() -> list[Coverage]:
    """What the knowledge base covers: each repository with its matched (active) records,
    most first. Said where nothing known was found, so a reader whose software is not
    there knows at once; cached per revision, like every aggregate."""
    return [
        Coverage(repo, n) for repo, n in per_revision("covered-repos", None, _count_repositories)
    ]


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
    """The ids of a tag's published records in list order, sliceable for ``Paginator``.

    Two plans, picked for each slice by what it reads (SQLite keeps no statistics to pick
    by; PostgreSQL plans either text by its own):
    - from the tag's index rows: all ``count`` of them joined and sorted (``CROSS JOIN``
      fixes that join order on SQLite), whatever the page; right for a rare tag;
    - along the list order (``kb_record_listing``), testing each record for the tag: about
      ``stop * published / count`` records read; right for a common tag's first pages.
    ``along_list`` compares the two estimates; ``test_query_plans`` pins both plans.
    """

    _BY_TAG = (
        "FROM kb_recordtag rt CROSS JOIN kb_errorrecord r "
        "WHERE r.id = rt.record_id AND rt.tag_id = %(tag)s AND r.status = %(status)s"
    )
    _ALONG_LIST = (
        "FROM kb_errorrecord r WHERE r.status = %(status)s AND EXISTS "
        "(SELECT 1 FROM kb_recordtag rt WHERE rt.record_id = r.id AND rt.tag_id = %(tag)s)"
    )

    def __init__(self, tag: Tag, count: int, published: int) -> None:
        self.params: dict[str, int | str] = {"tag": tag.pk, "status": Status.PUBLISHED}
        self.total = count  # the tag's published records
        self.published = published  # all published records

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def along_list(self, stop: int) -> bool:
        """Whether the first ``stop`` ids are cheaper to find along the list order."""
        return stop * self.published < self.total * self.total

    def __getitem__(self, key: slice) -> list[str]:
        start = key.start or 0
        stop = self.total if key.stop is None else min(key.stop, self.total)
        where = self._ALONG_LIST if self.along_list(stop) else self._BY_TAG
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT r.id {where} ORDER BY r.repo, r.slug, r.id "
                "LIMIT %(limit)s OFFSET %(start)s",
                {**self.params, "limit": max(stop - start, 0), "start": start},
            )
            return [row[0] for row in cursor.fetchall()]


def tag_page(tag: Tag, page_number: Any, per_page: int = PAGE_SIZE) -> Page:
    """One page of the published records carrying ``tag``, in list order.

    Its counts (the tag's, and all published records to pick a plan by) are cached per
    revision.
    """

    def counts() -> tuple[int, int]:
        published = ErrorRecord.objects.published()
        return _count_tag(tag), per_revision("published-count", None, published.count)

    ids = _TagRecordIds(tag, *per_revision("tag-page-counts", tag.pk, counts))
    return _load_rows(paginate(ids, page_number, per_page))


def tag_records(tag: Tag) -> QuerySet[ErrorRecord]:
    """The same records as a queryset (for callers that filter further)."""
    return ErrorRecord.objects.published().with_tag(tag.name)


# --- filtered, searchable record lists -----------------------------------------------------


# The parameters a record list is a function of (the filterset's, with q and tag, and the
# release filter, which needs the repository's release names: applied by `record_listing`).
RECORD_PARAMS = (*RecordFilter.base_filters, "release")


def release_names(repo: str) -> list[str]:
    """The release names ``repo``'s records carry, oldest first (cached per revision)."""
    if not repo or "\x00" in repo:
        return []
    return per_revision("release-names", repo, lambda: stored_release_names(repo))


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
    base = ErrorRecord.objects.published()
    filterset = RecordFilter(data, queryset=base)
    params = clean_params(data, RECORD_PARAMS)
    number = data.get("page") if page_number is None else page_number
    repo = params.get("repo", "")
    names = release_names(repo)
    scope: ReleaseScope | None = None
    problem = ""
    if params.get("release"):
        try:
            scope = release_scope(repo, params["release"], names)
        except ReleaseError as exc:
            problem = str(exc)
    # the form's cleaned value (a NUL byte, say, makes the form invalid: filterset.qs then
    # lists nothing, as for any invalid parameter)
    query = filterset.form.cleaned_data.get("q", "") if filterset.is_valid() else ""
    # A search filters the other way round: the first SEARCH_RANKED records the index
    # finds among those the other filters leave, then those ranked; the count is theirs.
    qs: QuerySet[ErrorRecord] = (
        RecordFilter({k: data.get(k) for k in data if k != "q"}, queryset=base).qs
        if query
        else filterset.qs
    )
    if scope is not None:
        qs = in_release(qs, scope)
    elif problem:
        qs = qs.none()  # a release that cannot be read lists nothing, and says why
    more_found = False
    found: list[str] | None = None
    if query:
        found, more_found = first_found(qs, query, SEARCH_RANKED)
        ranked = rank_found(ErrorRecord.objects.filter(pk__in=found), query)
        ids = list(ranked.values_list("pk", flat=True))
        page = _load_rows(paginate(ids, number, page_size))
    else:
        page = paginate_records(qs, number, page_size)
    facets: list[Facet] = []
    if with_facets:
        narrowing = clean_params(narrowing_params(params), RECORD_PARAMS)
        narrowing.pop("release", None)
        within: QuerySet[ErrorRecord] = base
        if scope is not None:
            # a release is one repository's: the facets count within it
            narrowing.update(repo=scope.repo, release=scope.label)
            within = in_release(base, scope)
        # the facets' records are the list's when no facet narrows the list (a release's
        # repository is the facets' too)
        same = not problem and not any(
            params.get(p) for p in FACET_PARAMS if not (scope and p == "repo")
        )
        shared = found if same else None
        combos = per_revision("facets", narrowing, lambda: facet_combos(narrowing, within, shared))
        facets = facets_from_combos(combos, params)
    return RecordListing(
        page=page,
        filterset=filterset,
        params=params,
        facets=facets,
        release=scope,
        release_error=problem,
        releases=names,
        more_found=more_found,
    )


MAX_ID_CHARS = int(ErrorRecord._meta.get_field("id").max_length or 0)


def visible_record(record_id: str, user: Any = None) -> ErrorRecord | None:
    """The record ``record_id`` if ``user`` may read it (``visible_to``), else ``None``."""
    # PostgreSQL refuses NUL in text, and no id is longer than the column: neither exists.
    if "\x00" in record_id or len(record_id) > MAX_ID_CHARS:
        return None
    return ErrorRecord.objects.visible_to(user).filter(pk=record_id).first()
