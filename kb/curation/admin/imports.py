"""Admin upload of a JSONL file and the page of each import job.

The upload runs the same importer as ``manage.py import_records``, as a background task
(``kb.curation.tasks.run_import``): the upload stores the file and an ``ImportJob`` and redirects
to the job's page, which shows progress while the task runs (polled by htmx, or by
reloading without JS) and the importer's report when it is done. The task runs in
``manage.py db_worker`` (``settings.TASKS``): the upload answers as soon as the job is
queued, whatever the file's size. A job whose worker died shows as stalled, with a
button that queues it again (``kb.curation.tasks.rerun_import``; the import is idempotent),
and every page that shows it stalled (the list, the job's page, its progress fragment)
settles its task row as failed first (``kb.curation.tasks.fail_stalled_task``, through
`shown`): the row would otherwise say ``RUNNING`` forever.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from kb.curation.admin.forms import UploadForm
from kb.curation.tasks import enqueue_import, fail_stalled_task, rerun_import
from kb.http import HtmxHttpRequest
from kb.records.models import ImportJob


def shown(job: ImportJob) -> ImportJob:
    """A job about to be shown: if it is stalled, its task row is marked failed first, so
    what the page says and what the task row says agree."""
    if job.stalled:
        fail_stalled_task(job)
    return job


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    change_form_template = "admin/kb/importjob/change_form.html"
    change_list_template = "admin/kb/importjob/change_list.html"
    list_display = ["source", "status", "progress", "summary", "created_by", "created_at"]
    list_filter = ["state", "dry_run"]
    list_select_related = ["created_by"]
    search_fields = ["source"]
    # one tuple for both: Django types ``fields`` wider (it also takes groups) than
    # ``readonly_fields``, so a list could not be both
    fields = readonly_fields = (
        "source", "status", "progress", "summary", "dry_run", "atomic", "size", "error",
        "created_by", "created_at", "started_at", "heartbeat_at", "finished_at", "task_id",
    )  # fmt: skip

    class Media:
        css = {"all": ["kb/admin/curation.css"]}

    @admin.display(description="state", ordering="state")
    def status(self, obj: ImportJob) -> str:
        return "Stalled" if shown(obj).stalled else obj.get_state_display()

    @admin.display(description="progress")
    def progress(self, obj: ImportJob) -> str:
        return f"{obj.percent}% · {obj.lines_done:,} lines"

    @admin.display(description="result")
    def summary(self, obj: ImportJob) -> str:
        r = obj.report or {}
        if not r:
            return ""
        keys = ["created", "updated", "unchanged", "rejected", "disabled", "conflicts"]
        text = ", ".join(f"{k} {r.get(k, 0)}" for k in keys)
        if r.get("dry_run"):
            text += " (dry run)"
        if r.get("rolled_back"):
            text += " (rolled back)"
        return text

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs come from the upload page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a job is a record of what happened

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def can_upload(self, request: HttpRequest) -> bool:
        return request.user.has_perm("kb.add_importjob") and request.user.has_perm(
            "kb.add_errorrecord"
        )

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        extra = {"can_upload": self.can_upload(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("upload/", wrap(self.upload_view), name="kb_importjob_upload"),
            path("<int:job_id>/progress/", wrap(self.progress_view), name="kb_importjob_progress"),
            path("<int:job_id>/rerun/", wrap(self.rerun_view), name="kb_importjob_rerun"),
            *super().get_urls(),
        ]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """GET: the form. POST: store the file, create the job, enqueue the import."""
        if not self.can_upload(request):
            raise PermissionDenied
        form = UploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            job = ImportJob.objects.create(
                source=upload.name[:255],
                size=upload.size or 0,
                dry_run=form.cleaned_data["dry_run"],
                atomic=form.cleaned_data["atomic"],
                # always a user: `admin_view` lets only signed-in staff through
                created_by=request.user if request.user.is_authenticated else None,
            )
            job.file.save(upload.name, upload, save=True)
            job = enqueue_import(job)
            level = messages.ERROR if job.state == ImportJob.State.FAILED else messages.SUCCESS
            self.message_user(request, f"Import of {job.source}: {job.get_state_display()}.", level)
            return HttpResponseRedirect(reverse("admin:kb_importjob_change", args=[job.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import a JSONL file",
            "form": form,
        }
        return render(request, "admin/kb/importjob/upload.html", context)

    @method_decorator(require_GET)
    @method_decorator(vary_on_headers("HX-Request"))
    def progress_view(self, request: HtmxHttpRequest, job_id: int) -> HttpResponse:
        """The job's progress fragment (polled by htmx while the job runs)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(ImportJob, pk=job_id)
        if not request.htmx:
            return HttpResponseRedirect(reverse("admin:kb_importjob_change", args=[job.pk]))
        return render(request, "admin/kb/importjob/progress.html#progress", {"job": shown(job)})

    @method_decorator(require_POST)
    def rerun_view(self, request: HttpRequest, job_id: int) -> HttpResponse:
        """Queue a stalled job again (POST from its page); any other job is left as it is."""
        if not self.can_upload(request):
            raise PermissionDenied
        job = get_object_or_404(ImportJob, pk=job_id)
        was_stalled = job.stalled
        job = rerun_import(job)
        if was_stalled and job.state != ImportJob.State.RUNNING:
            self.message_user(request, f"Import of {job.source}: queued again.", messages.SUCCESS)
        else:
            self.message_user(request, "Only a stalled import can be run again.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:kb_importjob_change", args=[job.pk]))

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        job = kwargs.get("obj")
        context["job"] = shown(job) if job is not None else None
        return super().render_change_form(request, context, *args, **kwargs)
