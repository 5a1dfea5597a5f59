"""``GET /records/<id>/``: a record's permanent page, the answer an on-call engineer reads.

Most records have little or no analysis, so the page leads with what is always known
(the message, where it is raised, the highlighted snippet) and offers neighbours found
by cheap indexed queries: the same error class, the same file, shared tags.

Visibility: published and retired records are public (retired ones under a banner, since
old links and logs still point at them); drafts exist only for staff, and are a plain 404
for everyone else so that their existence does not leak.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_safe
from django_htmx.middleware import HtmxDetails

from kb.highlight import LANGUAGE_NAMES, highlight_code, highlight_snippet, language_for
from kb.models import ErrorRecord, Status

NEIGHBOURS = 5
LIST_FIELDS = ("id", "slug", "repo", "error_message", "severity", "error_class", "status")

CODE_EXAMPLES = (
    ("example_fix", "Example fix"),
    ("validation_code", "Validation"),
    ("type_guard", "Type guard"),
    ("try_catch_pattern", "Error handling"),
)


class HtmxHttpRequest(HttpRequest):  # typing only: django-htmx adds ``htmx``
    htmx: HtmxDetails


def safe_external_url(url: str | None) -> str:
    """``url`` if it is an absolute http(s) URL, else ``""`` (no ``javascript:`` links)."""
    if not url:
        return ""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in {"http", "https"} or not parts.netloc:
        return ""
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return ""
    return url


def tag_url(tag: str) -> str:
    """The tag's browse page, or ``""`` for a tag no URL can carry (e.g. one with a ``/``)."""
    try:
        return reverse("tag_detail", args=[tag])
    except NoReverseMatch:
        return ""


def visible_records(user: Any) -> QuerySet[ErrorRecord]:
    qs = ErrorRecord.objects.all()
    if getattr(user, "is_staff", False):
        return qs
    return qs.exclude(status=Status.DRAFT)


def neighbours(record: ErrorRecord) -> dict[str, list[ErrorRecord]]:
    """Records a reader may also want: same error class, same file, most shared tags."""
    base = ErrorRecord.objects.published().exclude(pk=record.pk).only(*LIST_FIELDS)
    out: dict[str, list[ErrorRecord]] = {}
    seen: set[str] = set()

    def keep(rows: Any) -> list[ErrorRecord]:
        picked = [r for r in rows if r.pk not in seen][:NEIGHBOURS]
        seen.update(r.pk for r in picked)
        return picked

    out["same_file"] = keep(
        base.filter(repo=record.repo, file_path=record.file_path).order_by("line_number")[
            : NEIGHBOURS * 2
        ]
    )
    if record.error_class:
        out["same_class"] = keep(
            base.filter(repo=record.repo, error_class=record.error_class)[: NEIGHBOURS * 2]
        )
    tags = [str(t) for t in (record.tags or [])][:10]
    if tags:
        shared = (
            base.filter(recordtag__tag__name__in=tags)
            .annotate(shared=Count("recordtag", distinct=True))
            .order_by("-shared", "repo", "slug")[: NEIGHBOURS * 2]
        )
        out["shared_tags"] = keep(shared)
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
    try:
        record = visible_records(request.user).get(pk=record_id)
    except ErrorRecord.DoesNotExist:
        raise Http404("No such record") from None
    snippet = highlight_snippet(
        record.source_code,
        record.file_path,
        start=record.source_code_start,
        error_line=record.line_number,
    )
    context = {
        "record": record,
        "snippet": snippet,
        "github_url": safe_external_url(record.github_url),
        "examples": code_examples(record),
        "language": LANGUAGE_NAMES.get(language_for(record.file_path), ""),
        "neighbours": neighbours(record),
        "tags": [(tag, tag_url(tag)) for tag in (str(t) for t in (record.tags or []))],
    }
    return render(request, "kb/record_detail.html", context)
