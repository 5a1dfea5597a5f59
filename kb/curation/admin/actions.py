"""Bulk actions on records: publish, retire, add a tag.

Each goes through ``kb.records.services``, so every changed record gets a history row with the
curator's name and the matcher sees the change through the revision counter.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from kb.curation.admin.forms import AddTagForm
from kb.records.models import Status
from kb.records.services import add_tags, set_status


@admin.action(description="Publish selected records", permissions=["change"])
def publish(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> None:
    count = set_status(queryset, Status.PUBLISHED, reason="admin: publish", user=request.user)
    modeladmin.message_user(request, f"Published {count} record(s).", messages.SUCCESS)


@admin.action(description="Retire selected records", permissions=["change"])
def retire(modeladmin: Any, request: HttpRequest, queryset: QuerySet) -> None:
    count = set_status(queryset, Status.RETIRED, reason="admin: retire", user=request.user)
    modeladmin.message_user(request, f"Retired {count} record(s).", messages.SUCCESS)


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
