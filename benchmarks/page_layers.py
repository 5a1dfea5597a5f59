"""Does each read-side optimisation pay its way? Each layer against the plain path.

Run by ``bench_pages.py --layers`` on its full-dataset database. A layer is kept only if it
saves at least ``KEEP_SHARE`` of the page's server time by itself. Measured layers:

- ``links``: a reverse() cache (plain arguments slotted into a pattern reversed once per
  URL name) against ``reverse()`` per link, which ``kb.records.links`` does: the cache was
  removed for saving too little, and is kept here so the measurement can be repeated;
- ``tag_paginator``: the raw-SQL ``_TagRecordIds`` behind a tag page (its count cached per
  revision, the cheaper of two plans per slice) against Django's ``Paginator`` over the
  ORM queryset ``tag_records(tag)``;
- ``per_revision_costs`` (run by every ``bench_pages.py`` run): the tag counts the first
  request after a write recomputes, against the queries they replaced.

The pages are rendered afresh for every request (the rendered-fragment cache is cleared
before each one, untimed; the per-revision data caches stay warm, as in production),
because a cached fragment computes neither layer. Layered and plain requests alternate
(one ``timing.time_each`` over both, one value a request) so a burst from another process
lands on both; the figures are medians of process CPU time and of wall time, and the two
sides are compared as ``pyperf compare_to`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache
from typing import Any

import pyperf
import timing
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.urls import NoReverseMatch, get_script_prefix, reverse

KEEP_SHARE = 0.20
# Per-response values (CSP nonce, CSRF token) differ between any two renderings.
_PER_RESPONSE = re.compile(rb'nonce="[^"]*"|"X-CSRFToken": "[^"]*"|value="[A-Za-z0-9]{64}"')


_PLAIN_ARG = re.compile(r"[\w~-]+", re.ASCII)  # path segments that need no quoting


@lru_cache(maxsize=16)
def _pattern(name: str, prefix: str) -> str:
    return reverse(name, args=["__arg__"])


def _cached_link(name: str, arg: str) -> str:
    """The removed layer: plain arguments slotted into a once-reversed pattern."""
    if _PLAIN_ARG.fullmatch(arg):
        return _pattern(name, get_script_prefix()).replace("__arg__", arg)
    try:
        return reverse(name, args=[arg])
    except NoReverseMatch:
        return ""


@contextmanager
def cached_links() -> Iterator[None]:
    from kb.records import links

    kept = links._link
    links._link = _cached_link
    try:
        yield
    finally:
        links._link = kept


@contextmanager
def plain_tag_paginator() -> Iterator[None]:
    from kb.browse import selectors
    from kb.browse import views as browse

    def plain_tag_page(tag: Any, page_number: Any, per_page: int = selectors.PAGE_SIZE) -> Any:
        return selectors.paginate_records(selectors.tag_records(tag), page_number, per_page)

    kept = browse.tag_page
    browse.tag_page = plain_tag_page
    try:
        yield
    finally:
        browse.tag_page = kept


def compare(
    name: str,
    client: Client,
    urls: list[tuple[str, dict[str, str]]],
    layered: Callable[[], AbstractContextManager[Any]],
    plain: Callable[[], AbstractContextManager[Any]],
    n: int,
    kept: list[pyperf.Benchmark],
) -> dict[str, Any]:
    """Median CPU and wall time per request, layered and plain, over ``n`` pairs; the two
    paths must render the same bytes."""
    sides = {"layered": layered, "plain": plain}

    def get(request: tuple[str, tuple[str, dict[str, str]]]) -> bytes:
        side, (url, headers) = request
        with sides[side]():
            response = client.get(url, **headers)
        if response.status_code != 200:
            raise SystemExit(f"GET {url} -> {response.status_code}")
        return _PER_RESPONSE.sub(b"", response.content)

    def pairs(count: int) -> list[tuple[str, tuple[str, dict[str, str]]]]:
        return [(side, urls[i % len(urls)]) for i in range(count) for side in sides]

    clear = caches["fragments"].clear
    for request in pairs(min(len(urls), 10)):  # warm both paths once per distinct URL
        clear()
        get(request)
    plan = pairs(n)
    by_side = timing.split(timing.time_each(name, get, plan, before=clear), [s for s, _ in plan])
    if by_side["layered"].result != by_side["plain"].result:
        raise SystemExit(f"{name}: the plain path renders a different page")
    out: dict[str, Any] = {"example": urls[0][0], "distinct_requests": len(urls), "n": n}
    for side, one in by_side.items():
        kept += one.benchmarks
        out[f"{side}_cpu_ms"] = round(one.cpu.median() * 1e3, 2)
        out[f"{side}_wall_ms"] = round(one.wall.median() * 1e3, 2)
    for clock in ("cpu", "wall"):
        ref, changed = (getattr(by_side[side], clock) for side in ("plain", "layered"))
        out[f"layered_vs_plain_{clock}"] = timing.compare(ref, changed)
    out["saved_share_cpu"] = round(1 - out["layered_cpu_ms"] / out["plain_cpu_ms"], 3)
    out["saved_share_wall"] = round(1 - out["layered_wall_ms"] / out["plain_wall_ms"], 3)
    return out


def measure(
    client: Client, targets: dict[str, list[str]], n: int, kept: list[pyperf.Benchmark]
) -> dict[str, Any]:
    hx = {"HTTP_HX_REQUEST": "true"}
    tags = targets["tags"]
    popular = targets["popular"]
    tag_pages = [(f"/tags/{t}/", {}) for t in tags]
    deep_pages = [(f"/tags/{t}/?page={p}", hx) for t in popular for p in (2, 9, 40)]
    # (layer, kept in the code?, [(page, urls)], layered context, plain context)
    cases = [
        (
            "links",
            False,
            [
                ("record list, no filter", [("/records/", {})]),
                ("tag index /tags/", [("/tags/", {})]),
                ("tag page (page 1)", tag_pages),
                ("record page", [(f"/records/{r}/", {}) for r in targets["records"]]),
            ],
            cached_links,
            nullcontext,
        ),
        (
            "tag_paginator",
            True,
            [("tag page (page 1)", tag_pages), ("tag page (htmx, deep pages)", deep_pages)],
            nullcontext,
            plain_tag_paginator,
        ),
    ]
    results: dict[str, Any] = {}
    for layer, in_code, pages, layered, plain in cases:
        rows = [
            {"page": page, **compare(f"{layer}: {page}", client, urls, layered, plain, n, kept)}
            for page, urls in pages
        ]
        best = max(row["saved_share_cpu"] for row in rows)
        results[layer] = {
            "in_the_code": in_code,
            "pages": rows,
            "best_saved_share_cpu": best,
            "keep_share": KEEP_SHARE,
            "pays_its_way": best >= KEEP_SHARE,
        }
    return results


def per_revision_costs(tries: int, kept: list[pyperf.Benchmark]) -> dict[str, Any]:
    """What the first request after a write recomputes (the caches are per revision): the
    tag counts of ``/tags/`` and the count of the biggest tag's page, each timed against
    the query it replaced (an annotated LEFT JOIN from tags with ``COUNT(DISTINCT ...)``;
    the tag's rows joined to their records), both in this run; the median of ``tries``
    values (``timing.time_call``), the timings added to ``kept``."""
    from django.db.models import Count, Q

    from kb.browse.selectors import _count_tag, count_tags
    from kb.records.models import Status, Tag

    def replaced() -> list[tuple[str, int]]:
        published = Q(recordtag__record__status=Status.PUBLISHED)
        return list(
            Tag.objects.annotate(n=Count("recordtag", filter=published, distinct=True))
            .filter(n__gt=0)
            .order_by("-n", "name")
            .values_list("name", "n")
        )

    def median_ms(name: str, compute: Callable[[], Any]) -> float:
        one = timing.time_call(name, compute, values=tries)
        kept.extend(one.benchmarks)
        return round(one.wall.median() * 1e3, 1)

    def replaced_one() -> int:  # a tag page's count: each of the tag's rows joined
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM kb_recordtag rt CROSS JOIN kb_errorrecord r "
                "WHERE r.id = rt.record_id AND rt.tag_id = %s AND r.status = %s",
                [biggest.pk, Status.PUBLISHED],
            )
            return int(cursor.fetchone()[0])

    rows = count_tags()
    if rows != replaced():
        raise SystemExit("tag counts: the two queries disagree")
    biggest = Tag.objects.get(name=rows[0][0])
    if not _count_tag(biggest) == replaced_one() == rows[0][1]:
        raise SystemExit("one tag's count: the two queries disagree")
    now, before = median_ms("tag counts", count_tags), median_ms("tag counts, replaced", replaced)
    one_now = median_ms("one tag's count", lambda: _count_tag(biggest))
    one_before = median_ms("one tag's count, replaced", replaced_one)
    return {
        "tag_counts_ms": now,
        "tag_counts_replaced_query_ms": before,
        "tag_counts_speedup": round(before / now, 1),
        "biggest_tag": {"name": biggest.name, "records": rows[0][1]},
        "biggest_tag_count_ms": one_now,
        "biggest_tag_count_replaced_query_ms": one_before,
        "biggest_tag_count_speedup": round(one_before / one_now, 1),
        "tries": tries,
    }
