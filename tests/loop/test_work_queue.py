"""The curator's work queue ("What needs curating", `kb.loop.admin`): who may open it, what
each section lists and in which order, pagination without counting, the one-click actions
(a record drafted from a gap, accept/reject a proposal), hostile text inert, and a query
count that does not grow with the rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from kb.loop import selectors
from kb.loop.models import Gap, Proposal, UsageDay
from kb.loop.votes import cast_vote
from kb.records.models import ErrorRecord
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client, csrf_client
from tests.factories import make_record
from tests.hostile import PAYLOAD, assert_inert

pytestmark = pytest.mark.django_db

QUEUE = "admin:kb_work_queue"


def make_gap(count: int, template: str = "", **kw: Any) -> Gap:
    now = timezone.now()
    n = Gap.objects.count() + 1
    return Gap.objects.create(
        key=f"k{n}-{count}-{template[:10]}",
        template=template or f"Widget {n} failed for order <num>",
        count=count,
        first_seen=now - timedelta(days=2),
        last_seen=now,
        samples=kw.pop("samples", [f"Widget {n} failed for order 42"]),
        **kw,
    )


def section(html: str, key: str) -> str:
    return html.split(f'id="{key}"')[1].split("</section>")[0]


def rows(html: str, key: str, attr: str) -> list[str]:
    part = section(html, key)
    return [chunk.split('"')[0] for chunk in part.split(f'<tr data-{attr}="')[1:]]


def admin_content(html: str) -> str:
    """The page's content, without the admin's own frame (its theme toggle is SVG)."""
    return html.partition('id="content-main"')[2].partition('<footer id="footer"')[0]


def queue(client: Client, **params: Any) -> str:
    response = client.get(reverse(QUEUE), params)
    assert response.status_code == 200
    return response.content.decode()


def test_only_curators_open_the_queue(client: Client, curator_client: Client) -> None:
    assert client.get(reverse(QUEUE)).status_code == 302  # to the admin login
    plain_staff = User.objects.create_user("staff", is_staff=True)
    other = Client()
    other.force_login(plain_staff)
    assert other.get(reverse(QUEUE)).status_code == 403
    assert curator_client.get(reverse(QUEUE)).status_code == 200


def test_the_admin_index_links_to_the_queue(curator_client: Client) -> None:
    html = curator_client.get(reverse("admin:index")).content.decode()
    assert reverse(QUEUE) in html
    assert "What needs curating" in html


def test_open_gaps_by_count_each_with_a_create_link(curator_client: Client) -> None:
    small, big, middle = make_gap(1), make_gap(9), make_gap(4)
    record = make_record()
    closed = make_gap(30, closed_by=record, closed_at=timezone.now())
    html = queue(curator_client)
    assert rows(html, "gaps", "gap") == [str(big.pk), str(middle.pk), str(small.pk)]
    assert f"{reverse('admin:kb_errorrecord_add')}?gap={big.pk}" in section(html, "gaps")
    assert "Create a record from this gap" in section(html, "gaps")
    assert rows(html, "closed", "gap") == [str(closed.pk)]
    assert f'data-closed-by="{record.pk}"' in section(html, "closed")


def test_create_from_gap_prefills_a_draft_whose_pattern_matches_the_samples(
    curator_client: Client,
) -> None:
    gap = make_gap(
        2,
        template="Widget frobnication failed for order <*>",
        samples=[
            "Widget frobnication failed for order 42",
            "Widget frobnication failed for order 7",
        ],
    )
    response = curator_client.get(reverse("admin:kb_errorrecord_add"), {"gap": gap.pk})
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.initial["status"] == "draft"
    assert form.initial["error_message"] == "Widget frobnication failed for order {}"
    pattern = re.compile(form.initial["message_pattern"])
    assert all(pattern.search(sample) for sample in gap.samples)
    # An unknown gap id is an ordinary empty add form.
    empty = curator_client.get(reverse("admin:kb_errorrecord_add"), {"gap": "999999"})
    assert empty.context["adminform"].form.initial.get("message_pattern") in (None, "")


def test_sections_page_without_counting(curator_client: Client) -> None:
    for n in range(25):
        make_gap(100 - n)
    first = queue(curator_client)
    assert len(rows(first, "gaps", "gap")) == 20
    assert "?gaps=2#gaps" in section(first, "gaps")
    second = queue(curator_client, gaps=2)
    assert len(rows(second, "gaps", "gap")) == 5
    assert "Next" not in section(second, "gaps")
    assert not set(rows(first, "gaps", "gap")) & set(rows(second, "gaps", "gap"))
    assert queue(curator_client, gaps="junk")  # a bad page number is page 1


def test_unsolved_complaints_and_not_hit_sections(curator_client: Client) -> None:
    today = timezone.localdate()
    unsolved = make_record(solutions=[])
    solved = make_record()
    idle = make_record()
    UsageDay.objects.create(record_id=unsolved.pk, day=today, hits=7)
    UsageDay.objects.create(record_id=solved.pk, day=today, hits=50)
    UsageDay.objects.create(record_id="", day=today, misses=3)
    UsageDay.objects.create(record_id=idle.pk, day=today - timedelta(days=60), hits=9)
    for n in range(3):
        cast_vote(record=solved, verdict="not_fixed", voter=f"v{n}")
    cast_vote(record=solved, verdict="wrong_match", voter="w")
    cast_vote(record=idle, verdict="wrong_match", voter="w")
    cast_vote(record=idle, verdict="fixed", voter="x")
    html = queue(curator_client)
    assert rows(html, "unsolved", "record") == [unsolved.pk]
    assert '<td class="count">7</td>' in section(html, "unsolved")
    assert rows(html, "complaints", "record") == [solved.pk, idle.pk]
    assert '<td class="count">4</td>' in section(html, "complaints")
    assert '<td class="fixed">1</td>' in section(html, "complaints")  # idle's one fix
    not_hit = rows(html, "not_hit", "record")
    assert idle.pk in not_hit
    assert unsolved.pk not in not_hit
    assert solved.pk not in not_hit
    # A longer window sees the old hit.
    assert idle.pk not in rows(queue(curator_client, days=90), "not_hit", "record")


def test_accepting_a_proposal_merges_it_into_the_record(
    curator_client: Client, curator: User
) -> None:
    record = make_record()
    proposal = Proposal.objects.create(record=record, field="solutions", text="Restart it")
    rejected = Proposal.objects.create(record=record, field="documentation", text="Spam")
    html = queue(curator_client)
    assert rows(html, "proposals", "proposal") == [str(proposal.pk), str(rejected.pk)]
    url = reverse("admin:kb_work_queue_decide", args=[proposal.pk])
    response = curator_client.post(url, {"decision": "accept", "next": "?gaps=1"})
    assert response.status_code == 302
    assert response["Location"] == reverse(QUEUE) + "?gaps=1#proposals"
    record = ErrorRecord.objects.get(pk=record.pk)
    assert "Restart it" in record.solutions
    assert "solutions" in record.curated_fields
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by) == ("accepted", curator)
    reject = reverse("admin:kb_work_queue_decide", args=[rejected.pk])
    curator_client.post(reject, {"decision": "reject"})
    rejected.refresh_from_db()
    assert rejected.status == "rejected"
    assert "Spam" not in (ErrorRecord.objects.get(pk=record.pk).documentation or "")
    assert rows(queue(curator_client), "proposals", "proposal") == []


def test_deciding_needs_post_csrf_and_a_curator(
    csrf_client: Client, curator_client: Client
) -> None:
    proposal = Proposal.objects.create(record=make_record(), field="solutions", text="Restart")
    url = reverse("admin:kb_work_queue_decide", args=[proposal.pk])
    assert curator_client.get(url).status_code == 405
    assert csrf_client.post(url, {"decision": "accept"}).status_code == 403
    staff = Client()
    staff.force_login(User.objects.create_user("staff", is_staff=True))
    assert staff.post(url, {"decision": "accept"}).status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_an_offsite_next_is_ignored(curator_client: Client) -> None:
    proposal = Proposal.objects.create(record=make_record(), field="solutions", text="Restart")
    url = reverse("admin:kb_work_queue_decide", args=[proposal.pk])
    response = curator_client.post(url, {"decision": "reject", "next": "https://evil.example/"})
    assert response["Location"] == reverse(QUEUE) + "#proposals"


def test_hostile_reports_and_proposals_are_inert_in_the_queue_and_lists(
    curator_client: Client,
) -> None:
    make_gap(3, template=f"Widget failed {PAYLOAD}", samples=[PAYLOAD])
    Proposal.objects.create(
        record=make_record(), field="solutions", text=PAYLOAD, author=PAYLOAD[:90]
    )
    assert_inert(admin_content(queue(curator_client)))
    for name in ("admin:loop_gap_changelist", "admin:loop_proposal_changelist"):
        response = curator_client.get(reverse(name))
        assert response.status_code == 200
        table = response.content.decode().partition('id="result_list"')[2]
        assert_inert(table.partition("</table>")[0])


def test_the_queue_reads_a_fixed_number_of_queries_whatever_the_rows(
    curator_client: Client,
) -> None:
    def fill(n: int) -> None:
        today = timezone.localdate()
        for i in range(n):
            record = make_record(solutions=[])
            make_gap(i + 1)
            make_gap(i + 1, closed_by=record, closed_at=timezone.now())
            Proposal.objects.create(record=record, field="solutions", text=f"Try {i}")
            UsageDay.objects.create(record_id=record.pk, day=today, hits=i + 1)
            cast_vote(record=record, verdict="not_fixed", voter=f"v{i}")
        make_record()  # one never hit

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            queue(curator_client)
        return len(ctx.captured_queries)

    fill(1)
    few = queries()
    fill(24)
    many = queries()
    assert many == few
    assert few <= 20  # session, user, permissions, one per section, records of two sections


def test_unsolved_rows_skip_solved_records_across_slices() -> None:
    today = timezone.localdate()
    unsolved = []
    for n in range(15):
        record = make_record() if n % 3 == 0 else make_record(solutions=[])
        UsageDay.objects.create(record_id=record.pk, day=today, hits=100 - n)
        if n % 3:
            unsolved.append(record.pk)
    UsageDay.objects.create(record_id="deleted-record", day=today, hits=500)

    def ids(start: int, wanted: int) -> list[str]:
        rows = selectors.hit_records_without_solution(30, start=start, wanted=wanted)
        return [row["record_id"] for row in rows]

    assert ids(0, 1) == unsolved  # the generator reads further slices when asked
    assert ids(3, 2)[:2] == unsolved[3:5]
    assert ids(len(unsolved), 5) == []


def test_a_page_reads_only_up_to_its_end_of_any_row_source() -> None:
    read: list[int] = []

    def numbers() -> Iterator[int]:
        for n in range(100):
            read.append(n)
            yield n

    page = selectors.page_of(numbers(), 2, 20)
    assert (page.rows, page.has_next, page.has_previous) == (list(range(20, 40)), True, True)
    assert len(read) == 41
    last = selectors.page_of(lambda start, wanted: iter(range(start, 45)), 3, 20)
    assert (last.rows, last.has_next) == (list(range(40, 45)), False)
