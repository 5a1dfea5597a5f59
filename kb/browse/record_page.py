"""``GET /records/<id>/``: a record's permanent page, the answer an on-call engineer reads.

Most records have little or no analysis, so the page leads with what is always known
(the message, where it is raised, the highlighted snippet) and offers neighbours found
by cheap indexed queries: the same error class, the same file, shared tags.

Who sees which record is ``ErrorRecord.objects.visible_to(user)`` (retired records show
under a banner); neighbours are lists, so they are published records only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import connection
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_safe

from kb.browse.explanations import explanation_for
from kb.browse.highlight import LANGUAGE_NAMES, highlight_code, highlight_snippet, language_for
from kb.browse.releases import record_releases
from kb.browse.selectors import visible_record
from kb.http import HtmxHttpRequest
from kb.records.links import record_url, safe_external_url, source_host_name, tag_links
from kb.records.models import ErrorRecord, RecordTag, Status, Tag, current_revision
from kb.sources.selectors import learned_sites

NEIGHBOURS = 5
CANDIDATES = 300  # records looked at for shared tags
LIST_FIELDS = ("id", "slug", "repo", "error_message", "severity", "error_class", "status")

CODE_EXAMPLES = (
    ("example_fix", "Example fix"),
    ("validation_code", "Validation"),
    ("type_guard", "Type guard"),
    ("try_catch_pattern", "Error handling"),
)


def _tag_sizes(tag_ids: list[int]) -> dict[int, int]:
    """Records carrying each tag, counted up to ``CANDIDATES``, in one statement.

    How rare a tag is only matters below the number of candidates taken from it, and a
    capped count reads at most that many index rows of a common tag, where ``GROUP BY``
    reads all of them (a whole repository's worth on a large dataset).
    """
    table = RecordTag._meta.db_table
    capped = f"(SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE tag_id = %s LIMIT %s) c)"
    params = [value for tag_id in tag_ids for value in (tag_id, CANDIDATES)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join([capped] * len(tag_ids)), params)
        return dict(zip(tag_ids, cursor.fetchone(), strict=True))


def _sharing_tags(record: ErrorRecord, tags: list[str]) -> list[str]:
    """Ids of records sharing the most tags with ``record``, found through its rarest tags.

    A plain GROUP BY over every record carrying any of the tags reads every record of a
    common tag; starting from the rarest tags keeps every query small, and the rarest tags
    are the telling ones anyway.
    """
    tag_ids = list(Tag.objects.filter(name__in=tags).values_list("id", flat=True))
    if not tag_ids:
        return []
    sizes = _tag_sizes(tag_ids)
    rare = sorted((t for t in tag_ids if sizes[t] > 1), key=lambda t: (sizes[t], t))[:3]
    candidates = list(
        RecordTag.objects.filter(tag_id__in=rare)
        .exclude(record_id=record.pk)
        .order_by()  # RecordTag's default ordering would join and sort every record
        .values_list("record_id", flat=True)[:CANDIDATES]
    )
    shared = Counter(
        RecordTag.objects.filter(record_id__in=candidates, tag_id__in=tag_ids)
        .order_by()
        .values_list("record_id", flat=True)
    )
    return [record_id for record_id, _n in shared.most_common(NEIGHBOURS * 4)]


def neighbours(record: ErrorRecord) -> dict[str, list[ErrorRecord]]:
    """Records a reader may also want: same file, same error class, most shared tags.

    Each row gets its ``url``. Lists show published records only (``published()``), but
    here the status is checked in Python, not SQL: filtering on it makes SQLite pick the
    status index and scan every published record instead of using the repository index.
    """
    everyone = ErrorRecord.objects.exclude(pk=record.pk).only(*LIST_FIELDS)
    out: dict[str, list[ErrorRecord]] = {}
    seen: set[str] = set()

    def keep(rows: Any) -> list[ErrorRecord]:
        picked = [r for r in rows if r.pk not in seen and r.status == Status.PUBLISHED]
        picked = picked[:NEIGHBOURS]
        for row in picked:
            seen.add(row.pk)
            row.url = record_url(row.pk)
        return picked

    if record.file_path:  # a record reported from the field has no file to share
        out["same_file"] = keep(
            everyone.filter(repo=record.repo, file_path=record.file_path).order_by("line_number")[
                : NEIGHBOURS * 3
            ]
        )
    if record.error_class:
        out["same_class"] = keep(
            everyone.filter(repo=record.repo, error_class=record.error_class).order_by("slug")[
                : NEIGHBOURS * 3
            ]
        )
    tags = [str(t) for t in (record.tags or [])][:10]
    if tags:
        ids = _sharing_tags(record, tags)
        rank = {pk: i for i, pk in enumerate(ids)}
        rows = sorted(everyone.filter(pk__in=ids).order_by(), key=lambda r: rank[r.pk])
        out["shared_tags"] = keep(rows)
    return {k: v for k, v in out.items() if v}


def code_examples(record: ErrorRecord) -> list[dict[str, Any]]:
    return [
        {
            "key": attr,
            "title": title,
            "html": highlight_code(getattr(record, attr), record.file_path),
        }
        for attr, title in CODE_EXAMPLES
        if getattr(record, attr)
    ]


@require_safe
def record_detail(request: HtmxHttpRequest, record_id: str) -> HttpResponse:
    record = visible_record(record_id, request.user)
    if record is None:
        raise Http404("No such record")
    # The page body is a fragment cached per record and data revision; the costly parts
    # are lazy, so a cached view computes none of them.
    explanation = SimpleLazyObject(lambda: explanation_for(record) or False)
    link = safe_external_url(record.github_url)
    context = {
        "record": record,
        "fragment_key": f"{record.pk}|{current_revision()}",
        "explanation": explanation,
        "snippet": SimpleLazyObject(
            lambda: highlight_snippet(
                record.source_code,
                record.file_path,
                start=record.source_code_start or 1,
                error_line=record.line_number,
                explained=explanation.lines if explanation else (),
            )
        ),
        "github_url": link,
        "source_host": source_host_name(link) if link else "",
        "examples": SimpleLazyObject(lambda: code_examples(record)),
        "language": LANGUAGE_NAMES.get(language_for(record.file_path), ""),
        "neighbours": SimpleLazyObject(lambda: neighbours(record)),
        "tags": tag_links(record.tags),
        "learned": SimpleLazyObject(lambda: learned_sites(record.pk)),
        # From the record's own columns (no query); False for a record without history.
        "releases": SimpleLazyObject(lambda: record_releases(record) or False),
    }
    return render(request, "kb/record_detail.html", context)
