"""Bulk actions on records: publish, retire, add a tag.

Each goes through ``kb.services`` (or the same revision-and-history path), so every
changed record gets a history row with the curator's name and the matcher sees the
change through the revision counter.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from simple_history.utils import bulk_update_with_history

from kb.admin.forms import AddTagForm
from kb.models import ErrorRecord, Status, next_revision
from kb.services import set_status, sync_tags


@admin.action(description="Publish selected records", permissions=["change"])
def publish(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> None:
    count = set_status(queryset, Status.PUBLISHED, reason="admin: publish")
    modeladmin.message_user(request, f"Published {count} record(s).", messages.SUCCESS)


@admin.action(description="Retire selected records", permissions=["change"])
def retire(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> None:
    count = set_status(queryset, Status.RETIRED, reason="admin: retire")
    modeladmin.message_user(request, f"Retired {count} record(s).", messages.SUCCESS)


def add_tags(records: list[ErrorRecord], tags: list[str], *, user: Any, reason: str) -> int:
    """Append ``tags`` to each record's tag list (a curated edit); returns records changed."""
    changed: list[ErrorRecord] = []
    now = timezone.now()
    for record in records:
        new = [t for t in tags if t not in record.tags]
        if not new:
            continue
        record.tags = [*record.tags, *new]
        if "tags" not in record.curated_fields:
            record.curated_fields = [*record.curated_fields, "tags"]
        record.conflicts = {k: v for k, v in record.conflicts.items() if k != "tags"}
        record.updated_at = now
        changed.append(record)
    if not changed:
        return 0
    with transaction.atomic():
        revision = next_revision()
        for record in changed:
            record.revision = revision
        bulk_update_with_history(
            changed,
            ErrorRecord,
            ["tags", "curated_fields", "conflicts", "revision", "updated_at"],
            batch_size=500,
            default_user=user,
            default_change_reason=reason,
        )
        sync_tags(changed)
    return len(changed)


@admin.action(description="Add a tag to selected records", permissions=["change"])
def add_tag(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
    """Intermediate page: ask for the tag, then apply it (POST with ``apply``)."""
    form = AddTagForm(request.POST if "apply" in request.POST else None)
    if "apply" in request.POST and form.is_valid():
        tags = form.cleaned_data["tag"]
        count = add_tags(
            list(queryset), tags, user=request.user, reason=f"admin: add tag {', '.join(tags)}"
        )
        modeladmin.message_user(
            request, f"Added {', '.join(tags)} to {count} record(s).", messages.SUCCESS
        )
        return None
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Add a tag",
        "opts": opts,
        "form": form,
        "queryset": queryset[:50],
        "count": queryset.count(),
        "ids": list(queryset.values_list("pk", flat=True)),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "select_across": request.POST.get("select_across", "0"),
        "media": modeladmin.media,
    }
    return TemplateResponse(request, "admin/kb/errorrecord/add_tag.html", context)
