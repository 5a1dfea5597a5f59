"""Changelist filters for records: tag, analysis, pattern state, curation state, and the
record list's paginator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.contrib import admin
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from kb.browse.selectors import count_tags, per_revision

if TYPE_CHECKING:
    from kb.records.models import ErrorRecordQuerySet

TOP_TAGS = 40


class YesNoFilter(admin.SimpleListFilter):
    """A yes/no filter over one condition (``condition`` is the Q of "yes")."""

    condition: Q

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(self.condition)
        if self.value() == "no":
            return queryset.exclude(self.condition)
        return queryset


class HasAnalysisFilter(YesNoFilter):
    title = "has analysis text"
    parameter_name = "analysis"
    condition = (
        (Q(documentation__isnull=False) & ~Q(documentation=""))
        | (Q(trigger_scenarios__isnull=False) & ~Q(trigger_scenarios=""))
        | ~Q(solutions=[])
    )


class DisabledPatternFilter(YesNoFilter):
    title = "pattern disabled"
    parameter_name = "disabled"
    condition = ~Q(disabled_reason="")


class HasConflictsFilter(YesNoFilter):
    title = "has import conflicts"
    parameter_name = "conflicts"
    condition = ~Q(conflicts={})


class CuratedFilter(YesNoFilter):
    title = "curated"
    parameter_name = "curated"
    condition = ~Q(curated_fields=[])


def _top_tags() -> list[str]:
    """The ``TOP_TAGS`` tags on most records of any status, then by name: the site's tag
    count (``count_tags``), computed once a revision instead of on every list view."""
    return [name for name, _n in count_tags(published_only=False)[:TOP_TAGS]]


class TagFilter(admin.SimpleListFilter):
    """The most used tags (any tag works through ``?tag=name``)."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        top = per_revision("admin-top-tags", TOP_TAGS, _top_tags)
        current = self.value()
        if current and current not in top:
            top.insert(0, current)
        return [(name, name) for name in top]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        tag = self.value()
        if tag:
            # the record list's queryset: the records manager's own (`ErrorRecordQuerySet`)
            return cast("ErrorRecordQuerySet", queryset).with_tag(tag)
        return queryset


class ValuesFilter(admin.AllValuesFieldListFilter):
    """Django's "all values" filter, its ``SELECT DISTINCT`` over every record computed
    once a revision (``per_revision``) instead of on every list view: at large record
    counts it reads the whole table for a handful of values (repositories, error types)."""

    def __init__(
        self,
        field: Any,
        request: HttpRequest,
        params: Any,
        model: Any,
        model_admin: Any,
        field_path: str,
    ) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        values = self.lookup_choices
        self.lookup_choices = per_revision(
            "admin-values", f"{model._meta.label}.{field.name}", lambda: list(values)
        )


class RevisionCountPaginator(Paginator):
    """The list's page count from a count cached under the record revision and the exact
    query, so paging through an unchanged list does not count every row each time."""

    @cached_property
    def count(self) -> int:
        qs = self.object_list
        if not isinstance(qs, QuerySet):
            return super().count
        try:
            sql = str(qs.query)
        except EmptyResultSet:  # a filter that can match nothing (``pk__in=[]``) has no SQL
            return 0
        return per_revision("admin-count", sql, qs.count)
