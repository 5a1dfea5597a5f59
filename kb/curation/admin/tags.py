"""Tags in the admin: browse them with their record counts, jump to their records.

A record's ``tags`` list is the truth and ``Tag`` rows only index it, so a tag's name is
not edited here (renaming would leave the records' lists behind); curators change tags on
the records, one at a time or with the "add a tag" bulk action.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from kb.curation.admin.widgets import TAG_OK
from kb.records.models import Tag


class TagForm(forms.ModelForm):
    class Meta:
        model = Tag
        fields = ["name"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not TAG_OK.match(name):
            raise ValidationError(
                "A tag is one word of at most 100 characters, without spaces or / ? # % \\."
            )
        return name


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    form = TagForm
    list_display = ["name", "record_count", "records_link"]
    search_fields = ["name"]
    ordering = ["name"]
    list_per_page = 100

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(n_records=Count("recordtag"))

    def get_readonly_fields(self, request: HttpRequest, obj: Tag | None = None) -> list[str]:
        return ["name", "record_count", "records_link"] if obj else []

    @admin.display(description="records", ordering="n_records")
    def record_count(self, obj: Tag) -> int:
        return getattr(obj, "n_records", None) or obj.recordtag_set.count()

    @admin.display(description="")
    def records_link(self, obj: Tag) -> str:
        url = reverse("admin:kb_errorrecord_changelist") + "?" + urlencode({"tag": obj.name})
        return format_html('<a href="{}">show records</a>', url)

    def has_delete_permission(self, request: HttpRequest, obj: Tag | None = None) -> bool:
        return False
