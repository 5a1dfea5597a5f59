"""Record list filters (django-filter) and the facet counts shown beside them.

One ``RecordFilter`` serves the HTML list (``/records/``) and its JSON twin
(``/api/records``): the same GET parameters narrow both. Facet counts are *disjunctive*:
the counts for severity are computed with every filter applied except severity's own, so
the numbers next to the other severities say what choosing them would give, not zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import django_filters
from django.db.models import Count, QuerySet

from kb.browse.search import SEARCH_RANKED, first_found, search_records
from kb.records.models import ErrorRecord, ErrorRecordQuerySet

# (GET parameter, model field, label). Parameter names are the model's, in snake_case.
FACETS: list[tuple[str, str, str]] = [
    ("repo", "repo", "Repository"),
    ("severity", "severity", "Severity"),
    ("error_type", "error_type", "Error type"),
    ("error_class", "error_class", "Error class"),
    ("handling_strategy", "handling_strategy", "Handling strategy"),
]
FACET_PARAMS = frozenset(param for param, _f, _l in FACETS)
FACET_LIMIT = 60  # values listed per facet (error classes: the most common ones)


class RecordFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(method="filter_search", label="Search")
    repo = django_filters.CharFilter(field_name="repo", label="Repository")
    # Plain values, not choices: an unknown value lists nothing (as the facet says), rather
    # than being dropped by form validation and listing everything.
    severity = django_filters.CharFilter(field_name="severity", label="Severity")
    error_type = django_filters.CharFilter(field_name="error_type", label="Error type")
    error_class = django_filters.CharFilter(field_name="error_class", label="Error class")
    handling_strategy = django_filters.CharFilter(
        field_name="handling_strategy", label="Handling strategy"
    )
    tag = django_filters.CharFilter(method="filter_tag", label="Tag")

    class Meta:
        model = ErrorRecord
        fields: list[str] = []

    # ``queryset`` is the model's own (``ErrorRecord.objects``), narrowed by earlier filters.
    def filter_search(
        self, queryset: ErrorRecordQuerySet, name: str, value: str
    ) -> QuerySet[ErrorRecord]:
        return search_records(queryset, value)

    def filter_tag(
        self, queryset: ErrorRecordQuerySet, name: str, value: str
    ) -> QuerySet[ErrorRecord]:
        return queryset.with_tag(value)


@dataclass(slots=True)
class FacetValue:
    value: str
    count: int
    selected: bool = False


@dataclass(slots=True)
class Facet:
    param: str
    label: str
    selected: str
    values: list[FacetValue] = field(default_factory=list)


def narrowing_params(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that are not facets (search, tag): they define what facets count."""
    return {k: data.get(k) for k in data if k not in FACET_PARAMS and k != "page"}


def facet_combos(
    data: Mapping[str, Any], base: QuerySet[ErrorRecord], found: list[str] | None = None
) -> list[tuple[Any, ...]]:
    """(repo, severity, error_type, error_class, handling_strategy, count) rows, one query.

    Grouped over the records the non-facet filters (search, tag) leave: a few thousand
    combinations at most, from which every facet's counts follow (``facets_from_combos``).
    A search's are the records it ranks: the first ``SEARCH_RANKED`` it finds, or
    ``found`` when the list found them under the same filters.
    """
    narrowing = narrowing_params(data)
    filtered = RecordFilter(narrowing, queryset=base)
    qs = filtered.qs
    query = filtered.form.cleaned_data.get("q") if filtered.is_valid() else ""
    if query:  # a search's facets count the records it lists (`search.first_found`)
        if found is None:
            others = RecordFilter({k: v for k, v in narrowing.items() if k != "q"}, queryset=base)
            found, _more = first_found(others.qs, query, SEARCH_RANKED)
        qs = ErrorRecord.objects.filter(pk__in=found)  # by id alone: all are in ``base``
    fields = [field_name for _p, field_name, _l in FACETS]
    return [tuple(row) for row in qs.order_by().values_list(*fields).annotate(n=Count("pk"))]


def facets_from_combos(
    combos: list[tuple[Any, ...]], data: Mapping[str, Any], *, limit: int = FACET_LIMIT
) -> list[Facet]:
    """Per facet, its values with counts under every *other* active facet, largest first.

    Disjunctive counts: each facet's count sums the combinations that the other selected
    facets allow. The selected value is always listed (count 0 if nothing has it).
    """
    selected = {param: str(data.get(param) or "").strip() for param, _f, _l in FACETS}
    facets: list[Facet] = []
    for i, (param, _field, label) in enumerate(FACETS):
        others = [
            (j, selected[p]) for j, (p, _f, _l) in enumerate(FACETS) if j != i and selected[p]
        ]
        counts: dict[str, int] = {}
        for combo in combos:
            if all(combo[j] == want for j, want in others):
                value = combo[i]
                if value not in (None, ""):
                    counts[value] = counts.get(value, 0) + combo[-1]
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        chosen = selected[param]
        values = [FacetValue(value=v, count=n, selected=(v == chosen)) for v, n in ranked]
        if chosen and not any(v.selected for v in values):
            values.insert(0, FacetValue(value=chosen, count=counts.get(chosen, 0), selected=True))
        facets.append(Facet(param=param, label=label, selected=chosen, values=values))
    return facets
