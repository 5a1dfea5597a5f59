"""The curator's work queue ("What needs curating") and the loop's tables in the admin.

One page lists, each bounded and paginated on its own, what the loop has learnt that a
curator can act on, each item one click from its action: open gaps ("Create a record from
this gap" opens the record add form prefilled by ``kb.loop.services.draft_from_gap``),
pending proposals (accept merges through the curated-field path, reject drops it), the
most-hit records without a solution, the records people complain about, the records no
paste hit lately, and the gaps a record closed. The reads are ``kb.loop.selectors``'
(no ``COUNT`` per section); the writes are ``kb.loop.services``'.

Who may use it: staff who may change records (the Curators group), since accepting a
proposal edits a record. Gaps, votes and proposals are written by the public side only,
so their model admins are read-only lists. Report and proposal text is untrusted: the
page and the lists render it autoescaped, never as HTML.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from kb.loop import selectors, services
from kb.loop.models import Gap, Proposal
from kb.records.access import is_curator

PAGE_SIZE = 20
DEFAULT_DAYS = 30
MAX_DAYS = 366


def _number(request: HttpRequest, key: str, default: int = 1, top: int = 10_000) -> int:
    try:
        return min(top, max(1, int(request.GET.get(key, default))))
    except ValueError:
        return default


def _page_links(request: HttpRequest, key: str, page: selectors.Page) -> dict[str, str]:
    """The section's previous/next URLs: this section's page changes, the others stay."""
    links = {}
    for name, number, wanted in (
        ("previous", page.number - 1, page.has_previous),
        ("next", page.number + 1, page.has_next),
    ):
        if wanted:
            query = request.GET.copy()
            query[key] = str(number)
            links[name] = f"?{query.urlencode()}#{key}"
    return links


def _with_records(page: selectors.Page) -> selectors.Page:
    """Attach each ``{"record_id": ...}`` row's record (one query for the page)."""
    found = selectors.records_by_id([row["record_id"] for row in page.rows])
    for row in page.rows:
        row["record"] = found.get(row["record_id"])
    return page


def _unsolved(days: int, start: int, wanted: int) -> Any:
    return selectors.hit_records_without_solution(days, start=start, wanted=wanted)


def work_queue_sections(request: HttpRequest, days: int) -> list[dict[str, Any]]:
    """The sections in the page's order: key (its page parameter), title, rows."""
    specs: list[tuple[str, str, Any, bool]] = [
        ("gaps", "Unknown errors people reported (open gaps)", selectors.open_gaps(), False),
        ("proposals", "Proposals waiting for a decision", selectors.pending_proposals(), False),
        (
            "unsolved",
            f"Most-hit records without a solution (last {days} days)",
            partial(_unsolved, days),
            False,
        ),
        (
            "complaints",
            "Records with the most “Didn't help” or “Wrong match”",
            selectors.records_by_complaints(),
            True,
        ),
        (
            "not_hit",
            f"Published records no paste matched in the last {days} days",
            selectors.records_not_hit(days),
            False,
        ),
        ("closed", "Gaps closed by a record", selectors.closed_gaps(), False),
    ]
    sections = []
    for key, title, queryset, by_id in specs:
        page = selectors.page_of(queryset, _number(request, key), PAGE_SIZE)
        if by_id:
            page = _with_records(page)
        sections.append(
            {"key": key, "title": title, "page": page, **_page_links(request, key, page)}
        )
    return sections


class WrittenByThePublic(admin.ModelAdmin):
    """A table the public side writes (reports, proposals): curators read it here and
    act on it through the work queue, never edit its rows."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_curator(request.user) or super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Gap)
class GapAdmin(WrittenByThePublic):
    """Gaps as a list (search by template), and the work queue's URLs."""

    list_display = ["summary", "count", "first_seen", "last_seen", "closed_by"]
    list_filter = [("closed_at", admin.EmptyFieldListFilter)]
    search_fields = ["template"]
    ordering = ["-count"]
    list_select_related = ["closed_by"]
    show_full_result_count = False
    readonly_fields = [
        "template", "count", "first_seen", "last_seen", "samples", "nearest", "closed_by",
        "closed_at",
    ]  # fmt: skip
    exclude = ["key"]
    change_list_template = "kb/loop/gap_change_list.html"

    @admin.display(description="template")
    def summary(self, obj: Gap) -> str:
        return Truncator(obj.template).chars(120)

    def get_urls(self) -> list[URLPattern]:
        site = self.admin_site
        return [
            path("queue/", site.admin_view(self.queue_view), name="kb_work_queue"),
            path(
                "queue/proposals/<int:pk>/",
                site.admin_view(self.decide_view),
                name="kb_work_queue_decide",
            ),
            *super().get_urls(),
        ]

    def queue_view(self, request: HttpRequest) -> HttpResponse:
        if not is_curator(request.user):
            raise PermissionDenied
        days = _number(request, "days", DEFAULT_DAYS, MAX_DAYS)
        context = {
            **self.admin_site.each_context(request),
            "title": "What needs curating",
            "days": days,
            "sections": work_queue_sections(request, days),
            "add_url": reverse("admin:kb_errorrecord_add"),
        }
        return render(request, "kb/loop/work_queue.html", context)

    @method_decorator(require_POST)
    def decide_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Accept or reject one proposal, then back to the queue where the curator was."""
        if not is_curator(request.user):
            raise PermissionDenied
        proposal = get_object_or_404(Proposal.objects.select_related("record"), pk=pk)
        decision = request.POST.get("decision")
        try:
            if decision == "accept":
                record = services.accept_proposal(proposal=proposal, user=request.user)
                messages.success(request, f"Accepted: merged into {record.pk}'s {proposal.field}.")
            elif decision == "reject":
                services.reject_proposal(proposal=proposal, user=request.user)
                messages.success(request, "Rejected.")
            else:
                messages.error(request, "Choose accept or reject.")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        back = request.POST.get("next", "")
        if not back.startswith("?"):
            back = ""
        return HttpResponseRedirect(reverse("admin:kb_work_queue") + back + "#proposals")


@admin.register(Proposal)
class ProposalAdmin(WrittenByThePublic):
    """Every proposal with its decision; deciding happens on the work queue."""

    list_display = ["summary", "field", "record", "status", "created_at", "decided_by"]
    list_filter = ["status", "field"]
    list_select_related = ["record", "decided_by"]
    ordering = ["-created_at"]
    show_full_result_count = False
    raw_id_fields = ["record"]
    readonly_fields = [
        "record", "field", "text", "author", "status", "created_at", "decided_at", "decided_by",
    ]  # fmt: skip

    @admin.display(description="text")
    def summary(self, obj: Proposal) -> str:
        return Truncator(obj.text).chars(120)


admin.site.index_template = "kb/loop/admin_index.html"
