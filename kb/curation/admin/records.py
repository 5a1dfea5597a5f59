"""The record admin: where curators fix patterns, write remediation and settle imports.

Every save goes through ``kb.records.services.save_curator_edit``, which holds the curation
rules (what becomes curated, how a conflict is settled, what a revert keeps); this module
lays out the pages and hands it the facts of each save. History comes from
django-simple-history: the history page lists each version with user and time and can
revert to any of them; its revert form edits the old version's instance, which is how a
save is known to be a revert.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin.views.main import ORDER_VAR
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from simple_history.admin import SimpleHistoryAdmin
from simple_history.models import is_historic

from kb.browse.explanations import explanation_for
from kb.browse.releases import Commit, record_releases
from kb.browse.search import search_records
from kb.curation.admin import actions, filters
from kb.curation.admin.forms import ErrorRecordForm, wording_choices
from kb.curation.admin.widgets import TextField
from kb.curation.tester import run_bench
from kb.http import HtmxHttpRequest
from kb.loop.selectors import gap_draft
from kb.records.links import safe_external_url
from kb.records.models import ErrorRecord, ErrorRecordQuerySet
from kb.records.schema import BY_KEY
from kb.records.search_index import SEARCH_FIELDS
from kb.records.services import delete_records, save_curator_edit

PROVENANCE = [
    "repo", "file_path", "line_number", "github_link", "analyzed_sha", "analyzed_at",
    "content_changed_at", "source_code", "source_code_start", "source_code_end",
    "schema_version", "dataset_version", "extra",
]  # fmt: skip
# What the add form says above the source location: a record made from a gap has none.
PROVENANCE_OPTIONAL = (
    "Optional, all of it: a record reported from the field (made from a gap) has no source "
    "location. Leave repository, file path, line numbers and source code empty; the record "
    "page then says it was reported from the field."
)
STATE = [
    "pattern_state", "curated_list", "conflicts_table", "revision", "created_at", "updated_at",
]  # fmt: skip
CLASSIFICATION = [
    "slug", "error_type", "error_class", "error_code", "http_status", "severity",
    "handling_strategy", "background_tag", "tags",
]  # fmt: skip
# Records one admin search lists at most (see ``get_search_results``).
SEARCH_AT_MOST = 1000
# What a learn of the source's releases wrote: shown, never edited (it comes from the code).
RELEASES = ["first_release", "last_release", "removed_in", "release_commits", "release_wordings"]
ANALYSIS = [
    "documentation", "trigger_scenarios", "common_situations", "solutions",
    "prevention_tips", "example_fix", "validation_code", "type_guard", "try_catch_pattern",
]  # fmt: skip


@admin.register(ErrorRecord)
class ErrorRecordAdmin(SimpleHistoryAdmin):
    form = ErrorRecordForm
    formfield_overrides = {models.TextField: {"form_class": TextField}}
    change_form_template = "admin/kb/errorrecord/change_form.html"
    change_list_template = "admin/kb/errorrecord/change_list.html"
    object_history_list_template = "admin/kb/errorrecord/object_history_list.html"
    list_display = [
        "message", "repo", "severity", "status", "tag_list", "pattern_ok", "last_edit",
    ]  # fmt: skip
    list_filter = [
        "status",
        ("repo", filters.ValuesFilter),
        "severity",
        ("error_type", filters.ValuesFilter),
        filters.TagFilter,
        filters.HasAnalysisFilter,
        filters.DisabledPatternFilter,
        filters.HasConflictsFilter,
        filters.CuratedFilter,
    ]
    search_fields = ["=id", *SEARCH_FIELDS]  # shows the box; see get_search_results
    search_help_text = (
        "Words in the message, class, code, slug or documentation (as the site's search), "
        "or an exact id."
    )
    list_select_related = False  # no foreign keys; the last editor is one subquery
    list_per_page = 50
    paginator = filters.RevisionCountPaginator
    show_full_result_count = False
    actions = [actions.publish, actions.retire, actions.add_tag]
    history_list_display = ["status"]

    class Media:
        css = {"all": ["kb/admin/curation.css"]}

    # ------------------------------------------------------------------ list
    def get_queryset(self, request: HttpRequest) -> QuerySet:
        latest = self.model.history.model.objects.filter(id=OuterRef("pk")).order_by(
            "-history_date", "-history_id"
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                last_editor=Subquery(latest.values("history_user__username")[:1]),
                last_reason=Subquery(latest.values("history_change_reason")[:1]),
            )
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """The site's search (``kb.browse.search``: the trigram index on SQLite and PostgreSQL),
        rather than the admin's ``LIKE '%word%'`` over each search field, which reads every
        row whatever the word: best first, or in the order of the column the curator sorted
        by (which the change list set before searching). At most ``SEARCH_AT_MOST`` records,
        so a common word costs the same as a rare one; ``changelist_view`` says so when a
        search reaches it. Repositories are the sidebar's filter."""
        by_column = ORDER_VAR in request.GET
        ordering = queryset.query.order_by
        records = cast(ErrorRecordQuerySet, queryset)  # `get_queryset`'s: the records manager's
        found = search_records(records, search_term, ranked=not by_column, at_most=SEARCH_AT_MOST)
        return (found.order_by(*ordering) if by_column else found), False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        cl = (getattr(response, "context_data", None) or {}).get("cl")
        if cl is not None and cl.query and cl.result_count >= SEARCH_AT_MOST:
            messages.info(
                request,
                f"This search matches more records than the {SEARCH_AT_MOST:,} listed here "
                "(the first found, best first). Add a word or a filter to narrow it.",
            )
        return response

    @admin.display(description="message", ordering="error_message")
    def message(self, obj: ErrorRecord) -> str:
        return Truncator(obj.error_message).chars(90)

    @admin.display(description="tags")
    def tag_list(self, obj: ErrorRecord) -> str:
        return ", ".join(obj.tag_names())

    @admin.display(description="pattern", boolean=True)
    def pattern_ok(self, obj: ErrorRecord) -> bool:
        return not obj.disabled_reason

    @admin.display(description="last edit", ordering="updated_at")
    def last_edit(self, obj: ErrorRecord) -> str:
        who = getattr(obj, "last_editor", None) or getattr(obj, "last_reason", None) or ""
        when = obj.updated_at.strftime("%Y-%m-%d %H:%M") if obj.updated_at else ""
        return f"{when} · {who}" if who else when

    # ------------------------------------------------------------------ form layout
    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        # A record written in the admin starts as a draft: nothing matches it until a
        # curator publishes it.
        # "Create a record from this gap" (the work queue) passes ``?gap=<id>``.
        draft = gap_draft(request.GET.get("gap", ""))
        return {"status": "draft", **draft, **super().get_changeform_initial_data(request)}

    def get_fieldsets(self, request: HttpRequest, obj: ErrorRecord | None = None) -> list:
        main = ["status", "error_message", "message_pattern", "accept_collisions"]
        if obj is None:
            return [
                (None, {"fields": ["id", *main]}),
                ("Classification", {"fields": CLASSIFICATION}),
                ("Analysis", {"fields": ANALYSIS}),
                (
                    "Provenance",
                    {
                        "fields": [*(a for a in PROVENANCE if a != "github_link"), "github_url"],
                        "description": PROVENANCE_OPTIONAL,
                    },
                ),
            ]
        curation = ["curated_list", "conflicts_table", "change_reason"]
        # Conflicts are settled on the record as it is now, not on an old version's
        # revert form (its conflicts are the ones it had then).
        if obj.conflicts and not is_historic(obj):
            curation[2:2] = ["accept_incoming", "keep_curated"]
        releases: list = []
        retirable = bool(wording_choices(obj))
        if record_releases(obj) is not None or retirable:
            fields = [*RELEASES, "retired_wordings"] if retirable else RELEASES
            description = (
                "Learned from the code's releases: read only. An older wording that "
                "misleads can be retired."
            )
            releases = [("Releases", {"fields": fields, "description": description})]
        return [
            (None, {"fields": ["id", *main, "pattern_state"]}),
            ("Classification", {"fields": CLASSIFICATION}),
            ("Analysis", {"fields": [*ANALYSIS, "code_explanation"]}),
            *releases,
            ("Curation", {"fields": curation}),
            (
                "Provenance",
                {
                    "fields": [*PROVENANCE, "revision", "created_at", "updated_at"],
                    "classes": ["collapse"],
                },
            ),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ErrorRecord | None = None) -> list:
        if obj is None:
            return []
        return ["id", *PROVENANCE, *STATE, "code_explanation", *RELEASES]

    @admin.display(description="GitHub")
    def github_link(self, obj: ErrorRecord) -> str:
        url = safe_external_url(obj.github_url)  # the record page's rule: same links
        if url:
            return format_html('<a href="{}" rel="noopener noreferrer">{}</a>', url, url)
        return obj.github_url or ""

    @admin.display(description="what the code says (derived from the source)")
    def code_explanation(self, obj: ErrorRecord) -> str:
        found = explanation_for(obj)  # a curator's starting point for a write-up
        return found.sentence() if found else "nothing derived from the snippet"

    @admin.display(description="commits")
    def release_commits(self, obj: ErrorRecord) -> str:
        releases = record_releases(obj)
        rows = [
            (label, _commit_html(commit))
            for label, commit in (
                ("added by", releases.introduced_by if releases else None),
                ("last changed by", releases.last_changed_by if releases else None),
            )
            if commit is not None
        ]
        if not rows:
            return "none recorded"
        return format_html_join("", "<div>{}: {}</div>", rows)

    @admin.display(description="wordings")
    def release_wordings(self, obj: ErrorRecord) -> str:
        releases = record_releases(obj)
        if releases is None or not releases.wordings:
            return "none recorded"
        rows = [
            (
                w.span or "?",
                "current" if w.current else "retired" if w.retired else "alias (matched)",
                w.message,
                w.pattern,
                _commit_html(w.introduced_by) if w.introduced_by else "",
            )
            for w in releases.wordings
        ]
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
            "<td>{}</td></tr>",
            rows,
        )
        return format_html(
            '<table class="kb-wordings"><thead><tr><th>releases</th><th>state</th>'
            "<th>message</th><th>pattern</th><th>added by</th></tr></thead><tbody>{}</tbody>"
            "</table>",
            body,
        )

    @admin.display(description="pattern state")
    def pattern_state(self, obj: ErrorRecord) -> str:
        if obj.disabled_reason:
            return format_html('<span class="kb-bad">Disabled: {}</span>', obj.disabled_reason)
        return f"Matched by {obj.pattern_engine or 'the matcher'}"

    @admin.display(description="fields you own")
    def curated_list(self, obj: ErrorRecord) -> str:
        return ", ".join(obj.curated_fields) or "none (imports update every field)"

    @admin.display(description="conflicts with the newest import")
    def conflicts_table(self, obj: ErrorRecord) -> str:
        if not obj.conflicts:
            return "none"
        rows = []
        for key, c in obj.conflicts.items():
            field = BY_KEY.get(key)
            mine = getattr(obj, field.attr, "") if field else ""
            rows.append((key, _show(mine), _show(c.get("incoming")), c.get("source", ""),
                         c.get("line", ""), c.get("contentChangedAt") or ""))  # fmt: skip
        body = format_html_join(
            "", "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}:{}</td><td>{}</td></tr>", rows
        )
        return format_html(
            '<table class="kb-conflicts"><thead><tr><th>field</th><th>yours</th>'
            "<th>import</th><th>from</th><th>changed</th></tr></thead><tbody>{}</tbody>"
            "</table>",
            body,
        )

    # ------------------------------------------------------------------ saving
    def save_model(self, request: HttpRequest, obj: ErrorRecord, form: Any, change: bool) -> None:
        edit = save_curator_edit(
            record=obj,
            changed_fields=form.changed_data,
            user=request.user,
            reason=form.cleaned_data.get("change_reason") or "",
            # The revert form edits the old version's instance (``history_form_view``).
            is_revert=is_historic(obj),
            take_incoming=form.take_incoming,
            keep_mine=form.keep_mine,
        )
        for warning in edit.warnings:
            messages.warning(request, warning)

    def delete_model(self, request: HttpRequest, obj: ErrorRecord) -> None:
        delete_records([obj])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        delete_records(list(queryset))

    # ------------------------------------------------------------------ test bench
    def get_urls(self) -> list[URLPattern]:
        bench = self.admin_site.admin_view(self.bench_view)
        return [
            path("bench/", bench, name="kb_errorrecord_bench_add"),
            path("<path:object_id>/bench/", bench, name="kb_errorrecord_bench"),
            *super().get_urls(),
        ]

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        obj = kwargs.get("obj")
        context["bench_url"] = (
            reverse("admin:kb_errorrecord_bench", args=[obj.pk])
            if obj is not None
            else reverse("admin:kb_errorrecord_bench_add")
        )
        return super().render_change_form(request, context, *args, **kwargs)

    @method_decorator(require_POST)
    @method_decorator(vary_on_headers("HX-Request"))
    def bench_view(self, request: HtmxHttpRequest, object_id: str | None = None) -> HttpResponse:
        """POST only (it reads an unsaved form); answers a fragment to htmx, a page to
        a plain form post (the no-JS path)."""
        allowed = (
            self.has_change_permission(request) if object_id else self.has_add_permission(request)
        )
        if not allowed:
            raise PermissionDenied
        result = run_bench(
            pattern=request.POST.get("message_pattern", ""),
            message=request.POST.get("error_message", ""),
            text=request.POST.get("bench_text", ""),
            record_id=object_id,
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": ErrorRecord._meta,
            "title": "Pattern test bench",
            "result": result,
            "record_id": object_id,
            "sample": request.POST.get("bench_text", ""),
        }
        template = "admin/kb/errorrecord/bench.html"
        if request.htmx:
            template += "#results"
        return render(request, template, context)


def _commit_html(commit: Commit) -> str:
    """A commit as a line of the admin: its short sha (a link when the source gives one),
    subject and day; every part escaped."""
    sha = (
        format_html(
            '<a href="{}" rel="noopener noreferrer"><code>{}</code></a>', commit.url, commit.short
        )
        if commit.url
        else format_html("<code>{}</code>", commit.short)
    )
    return format_html("{} {} ({})", sha, commit.subject, commit.day or "undated")


def _show(value: Any) -> str:
    if isinstance(value, list):
        return " · ".join(str(v) for v in value)
    return Truncator("" if value is None else str(value)).chars(300)
