"""The admin of sources and their learn jobs.

A curator adds a source (a repository path or remote, ``pypi:NAME==VERSION``, an archive)
and presses **Learn now** on its page (or the list's action): that creates a ``LearnJob``
and enqueues the worker's task (``kb.sources.tasks.run_learn``); the job's page shows
its progress while the worker reads (polled by htmx, or by reloading without JS), then
what it did, like an import job's.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from kb.http import HtmxHttpRequest
from kb.sources.models import LearnJob, Source
from kb.sources.tasks import enqueue_learn


def can_learn(request: HttpRequest) -> bool:
    """Learning writes records: it takes the right to change sources and to add records."""
    return request.user.has_perm("sources.change_source") and request.user.has_perm(
        "kb.add_errorrecord"
    )


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    change_form_template = "admin/sources/source/change_form.html"
    list_display = ["repo", "location", "kind", "state", "last_revision", "last_learned_at"]
    list_filter = ["kind", "state", "publish"]
    search_fields = ["repo", "location"]
    fields = [
        "location", "repo", "web_url", "revision", "releases", "release_separator", "since",
        "publish", "include_tests",
        "kind", "state", "last_revision", "last_learned_at", "last_error",
    ]  # fmt: skip
    readonly_fields = ["kind", "state", "last_revision", "last_learned_at", "last_error"]
    actions = ["learn_now"]

    class Media:
        css = {"all": ["kb/admin/curation.css"]}

    @admin.action(description="Learn now")
    def learn_now(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        if not can_learn(request):
            raise PermissionDenied
        for source in queryset:
            job = enqueue_learn(source, user=request.user)
            self.message_user(
                request, f"Learn of {source.repo}: {job.get_state_display()}.", messages.SUCCESS
            )

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:source_id>/learn/", wrap(self.learn_view), name="sources_source_learn"),
            *super().get_urls(),
        ]

    @method_decorator(require_POST)
    def learn_view(self, request: HttpRequest, source_id: int) -> HttpResponse:
        """Learn now (POST from the source's page): queue a job, show its page."""
        if not can_learn(request):
            raise PermissionDenied
        source = get_object_or_404(Source, pk=source_id)
        job = enqueue_learn(source, user=request.user)
        level = messages.ERROR if job.state == LearnJob.State.FAILED else messages.SUCCESS
        self.message_user(request, f"Learn of {source.repo}: {job.get_state_display()}.", level)
        return HttpResponseRedirect(reverse("admin:sources_learnjob_change", args=[job.pk]))

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        context["can_learn"] = can_learn(request)
        source = kwargs.get("obj")
        context["jobs"] = source.jobs.all()[:10] if source is not None else []
        return super().render_change_form(request, context, *args, **kwargs)


@admin.register(LearnJob)
class LearnJobAdmin(admin.ModelAdmin):
    change_form_template = "admin/sources/learnjob/change_form.html"
    list_display = ["source", "status", "progress", "summary", "created_by", "created_at"]
    list_filter = ["state"]
    list_select_related = ["source", "created_by"]
    fields = readonly_fields = (
        "source", "status", "progress", "summary", "requested_revision", "revision", "since",
        "error", "created_by", "created_at", "started_at", "heartbeat_at", "finished_at",
        "task_id",
    )  # fmt: skip

    class Media:
        css = {"all": ["kb/admin/curation.css"]}

    @admin.display(description="state", ordering="state")
    def status(self, obj: LearnJob) -> str:
        return "Stalled" if obj.stalled else obj.get_state_display()

    @admin.display(description="progress")
    def progress(self, obj: LearnJob) -> str:
        files = f"{obj.files_read:,} of {obj.files_total:,} files"
        return f"{obj.percent}% · {files} · {obj.sites:,} sites"

    @admin.display(description="result")
    def summary(self, obj: LearnJob) -> str:
        if obj.state != LearnJob.State.DONE:
            return ""
        walked = ""
        report = obj.report if isinstance(obj.report, dict) else {}
        if report.get("releases", 1) != 1 or report.get("aliases"):
            walked = (
                f"{report.get('releases')} releases, {report.get('aliases', 0)} older wordings, "
                f"{report.get('removed', 0)} removed sites kept; "
            )
        return (
            f"{walked}created {obj.created}, updated {obj.updated}, unchanged {obj.unchanged}, "
            f"gone {obj.gone}, errors {obj.errors}"
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs come from a source's Learn now

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a job is a record of what happened

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<int:job_id>/progress/",
                wrap(self.progress_view),
                name="sources_learnjob_progress",
            ),
            *super().get_urls(),
        ]

    @method_decorator(require_GET)
    @method_decorator(vary_on_headers("HX-Request"))
    def progress_view(self, request: HtmxHttpRequest, job_id: int) -> HttpResponse:
        """The job's progress fragment (polled by htmx while the job runs)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(LearnJob, pk=job_id)
        if not request.htmx:
            return HttpResponseRedirect(reverse("admin:sources_learnjob_change", args=[job.pk]))
        return render(request, "admin/sources/learnjob/progress.html#progress", {"job": job})

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        context["job"] = kwargs.get("obj")
        return super().render_change_form(request, context, *args, **kwargs)
