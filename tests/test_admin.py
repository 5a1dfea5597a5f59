"""Curation admin: every page renders for a curator, lists and filters work, saves go
through the curated-save path, bulk actions bump revisions and keep history."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from kb.records.models import ErrorRecord, ImportJob, Status, Tag, current_revision
from kb.records.services import set_status
from tests.curation_support import *  # noqa: F403 - fixtures: curator, curator_client, csrf_client
from tests.curation_support import change_url, form_data
from tests.factories import make_record

pytestmark = pytest.mark.django_db


# --- every page renders for a curator --------------------------------------------------
def test_curator_is_staff_but_not_superuser(curator: User) -> None:
    assert curator.is_staff
    assert not curator.is_superuser
    assert curator.has_perm("kb.change_errorrecord")
    assert not curator.has_perm("kb.delete_errorrecord")
    assert not curator.has_perm("auth.change_user")


def test_every_admin_page_renders_for_a_curator(curator_client: Client) -> None:
    record = make_record()
    record.message_pattern = record.message_pattern + " again"
    job = ImportJob.objects.create(source="demo.jsonl", state=ImportJob.State.RUNNING, size=10)
    history_id = record.history.latest().history_id
    urls = [
        reverse("admin:index"),
        reverse("admin:kb_errorrecord_changelist"),
        reverse("admin:kb_errorrecord_add"),
        change_url(record),
        reverse("admin:kb_errorrecord_history", args=[record.pk]),
        reverse("admin:kb_errorrecord_simple_history", args=[record.pk, history_id]),
        reverse("admin:kb_tag_changelist"),
        reverse("admin:kb_tag_change", args=[Tag.objects.first().pk]),
        reverse("admin:kb_importjob_changelist"),
        reverse("admin:kb_importjob_upload"),
        reverse("admin:kb_importjob_change", args=[job.pk]),
    ]
    for url in urls:
        response = curator_client.get(url)
        assert response.status_code == 200, url
    bench = curator_client.post(
        reverse("admin:kb_errorrecord_bench", args=[record.pk]),
        {"message_pattern": "x (.+?) y", "bench_text": "x 1 y"},
    )
    assert bench.status_code == 200


def test_anonymous_users_are_sent_to_the_login_page() -> None:
    response = Client().get(reverse("admin:kb_errorrecord_changelist"))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


def test_changelist_filters_each_render(curator_client: Client) -> None:
    make_record(tags=["alpha", "beta"], documentation=None, triggerScenarios=None, solutions=[])
    make_record(solutions=["Restart it"], severity="fatal")
    url = reverse("admin:kb_errorrecord_changelist")
    for query in [
        "status__exact=published",
        "severity__exact=fatal",
        "repo=risingwavelabs/risingwave",
        "error_type=error_code",
        "tag=alpha",
        "analysis=yes",
        "analysis=no",
        "disabled=yes",
        "conflicts=yes",
        "curated=no",
        "q=Backfill",
    ]:
        response = curator_client.get(f"{url}?{query}")
        assert response.status_code == 200, query
    assert "2 error records" in curator_client.get(url).content.decode()
    assert "1 error record" in curator_client.get(f"{url}?tag=alpha").content.decode()
    assert "1 error record" in curator_client.get(f"{url}?analysis=yes").content.decode()


def _tag_choices(client: Client) -> list[str]:
    page = client.get(reverse("admin:kb_errorrecord_changelist")).content.decode()
    return re.findall(r'href="\?tag=([^"&]+)"', page)


def test_tag_filter_lists_the_most_used_tags_and_follows_edits(curator_client: Client) -> None:
    first = make_record(tags=["zulu", "yankee"])
    make_record(tags=["zulu", "xray"])
    draft = make_record(tags=["zulu", "xray", "whiskey"])
    set_status(ErrorRecord.objects.filter(pk=draft.pk), Status.DRAFT)  # still listed here
    assert _tag_choices(curator_client) == ["zulu", "xray", "whiskey", "yankee"]
    _action(curator_client, "add_tag", [first], apply="1", tag="whiskey")  # a new revision
    assert _tag_choices(curator_client) == ["zulu", "whiskey", "xray", "yankee"]


def test_list_counts_and_filter_values_once_a_revision_and_follow_edits(
    curator_client: Client,
) -> None:
    """The repository filter's distinct values and the page count read every row: they are
    computed once a revision, and an edit (a new revision) shows the new value."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    record = make_record(repo="acme/first")
    make_record(repo="acme/second")
    url = reverse("admin:kb_errorrecord_changelist")
    curator_client.get(url)
    with CaptureQueriesContext(connection) as again:
        page = curator_client.get(url)
    sql = [q["sql"] for q in again.captured_queries]
    assert not [q for q in sql if "DISTINCT" in q or "COUNT(" in q], sql
    assert b"acme/first" in page.content
    assert b"acme/second" in page.content
    assert page.context["cl"].result_count == 2

    ErrorRecord.objects.filter(pk=record.pk).update(repo="acme/third")
    set_status(ErrorRecord.objects.filter(pk=record.pk), Status.DRAFT)  # a new revision
    page = curator_client.get(url)
    assert b"acme/third" in page.content
    assert b"acme/first" not in page.content


def test_search_is_the_site_search_in_the_order_the_list_is_sorted_by(
    curator_client: Client,
) -> None:
    def add(message: str, slug: str, **extra: Any) -> ErrorRecord:
        return make_record(errorMessage=message, messagePattern=message, slug=slug, **extra)

    later = add("Zebra stampede in stream 7", "b-zebra")
    first = add("Another zebra stampede", "a-zebra")
    by_class = add("Unrelated failure", "c-other", errorClass="ZebraStampedeError")
    by_docs = add("Quiet failure", "0-docs", documentation="Seen after a zebra stampede.")
    other = add("Nothing to see here", "d-other")
    url = reverse("admin:kb_errorrecord_changelist")

    def order(page: str) -> list[ErrorRecord]:
        found = [r for r in (first, later, by_class, by_docs) if r.error_message in page]
        return sorted(found, key=lambda r: page.index(r.error_message))

    page = curator_client.get(f"{url}?q=zebra+stampede").content.decode()
    # Best first, as on the site: the hits in the message before the others.
    assert set(order(page)[:2]) == {first, later}
    assert set(order(page)[2:]) == {by_class, by_docs}
    # A column the curator sorts by holds while searching (``o=-1``: message, descending).
    by_message = curator_client.get(f"{url}?q=zebra+stampede&o=-1").content.decode()
    assert order(by_message) == [later, by_class, by_docs, first]
    assert "4 results" in page
    assert "Add a word or a filter to narrow it" not in page
    assert other.error_message not in page
    assert by_class.error_message in page
    assert by_docs.error_message in page  # the documentation is searched too
    by_id = curator_client.get(f"{url}?q={other.pk}").content.decode()
    assert "1 result" in by_id
    assert other.error_message in by_id


def test_a_search_matching_more_than_the_admin_lists_says_so(
    curator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kb.curation.admin.records.SEARCH_AT_MOST", 2)
    for n in range(3):
        make_record(errorMessage=f"Ledger drift {n}", messagePattern=f"Ledger drift {n}")
    url = reverse("admin:kb_errorrecord_changelist")
    page = curator_client.get(f"{url}?q=ledger+drift").content.decode()
    assert "2 results" in page
    assert "more records than the 2 listed here" in page
    assert "Add a word or a filter to narrow it" in page
    nothing = curator_client.get(f"{url}?q=quasar+meltdown")
    assert nothing.status_code == 200
    assert "0 results" in nothing.content.decode()


def test_changelist_shows_the_last_editor(curator_client: Client) -> None:
    record = make_record()
    curator_client.post(change_url(record), form_data(record, documentation="Why it fails."))
    page = curator_client.get(reverse("admin:kb_errorrecord_changelist")).content.decode()
    assert "curator" in page


def test_provenance_fields_are_read_only(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.post(
        change_url(record),
        form_data(record, repo="evil/repo", file_path="x.py", github_url="javascript:alert(1)"),
    )
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.repo == "risingwavelabs/risingwave"
    assert record.github_url.startswith("https://github.com/")


def test_github_link_is_a_link_only_for_a_web_url(curator_client: Client) -> None:
    record = make_record()
    page = curator_client.get(change_url(record)).content.decode()
    assert f'<a href="{record.github_url}" rel="noopener noreferrer">' in page
    ErrorRecord.objects.filter(pk=record.pk).update(github_url="javascript:alert(1)")
    page = curator_client.get(change_url(record)).content.decode()
    assert 'href="javascript:' not in page
    assert "javascript:alert(1)" in page  # shown as text


# --- saving through the curated path --------------------------------------------------
def test_edit_marks_fields_curated_and_bumps_the_revision(curator_client: Client) -> None:
    record = make_record()
    before = current_revision()
    response = curator_client.post(
        change_url(record),
        form_data(record, solutions="Second first\nThen the first", change_reason="reorder"),
    )
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.solutions == ["Second first", "Then the first"]
    assert record.curated_fields == ["solutions"]
    assert record.revision > before
    latest = record.history.latest()
    assert latest.history_user.username == "curator"
    assert latest.history_change_reason == "reorder"


def test_saving_unchanged_form_curates_nothing(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.post(change_url(record), form_data(record))
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.curated_fields == []


def test_tags_edit_rebuilds_the_tag_index(curator_client: Client) -> None:
    record = make_record()
    curator_client.post(change_url(record), form_data(record, tags="vnode, brand-new"))
    record.refresh_from_db()
    assert record.tags == ["vnode", "brand-new"]
    names = list(record.recordtag_set.order_by("position").values_list("tag__name", flat=True))
    assert names == ["vnode", "brand-new"]


def test_bad_tags_are_refused(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.post(change_url(record), form_data(record, tags="ok, a/b"))
    assert response.status_code == 200
    assert "Tags are single words" in response.content.decode()


def test_curator_can_add_a_record(curator_client: Client) -> None:
    data = form_data(make_record())
    data.update(
        id="added0000000001",
        error_message="Widget {} exploded during frobnication",
        message_pattern="Widget (.+?) exploded during frobnication",
        slug="widget-exploded",
        repo="acme/widgets",
        file_path="src/w.rs",
        line_number=3,
        source_code="",
        source_code_start=1,
        source_code_end=5,
        github_url="",
        analyzed_sha="",
        schema_version=2,
        dataset_version="",
        extra="{}",
    )
    response = curator_client.post(reverse("admin:kb_errorrecord_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    record = ErrorRecord.objects.get(pk="added0000000001")
    assert record.pattern_engine
    assert record.recordtag_set.count() == len(record.tags)


# --- bulk actions --------------------------------------------------------------------
def _action(client: Client, action: str, records: list[ErrorRecord], **extra: str) -> Any:
    return client.post(
        reverse("admin:kb_errorrecord_changelist"),
        {"action": action, "_selected_action": [r.pk for r in records], **extra},
    )


def test_retire_and_publish_actions_keep_history(curator_client: Client) -> None:
    a, b = make_record(), make_record()
    before = current_revision()
    response = _action(curator_client, "retire", [a, b])
    assert response.status_code == 302
    assert set(ErrorRecord.objects.values_list("status", flat=True)) == {Status.RETIRED}
    assert current_revision() > before
    assert a.history.latest().history_change_reason == "admin: retire"
    assert a.history.latest().history_user.username == "curator"
    _action(curator_client, "publish", [a])
    a.refresh_from_db()
    assert a.status == Status.PUBLISHED


def test_add_tag_action_asks_then_applies(curator_client: Client) -> None:
    a, b = make_record(), make_record()
    page = _action(curator_client, "add_tag", [a, b])
    assert page.status_code == 200
    assert "Add a tag to 2 records" in page.content.decode()
    done = _action(curator_client, "add_tag", [a, b], apply="1", tag="triaged")
    assert done.status_code == 302
    for record in (a, b):
        record.refresh_from_db()
        assert record.tags[-1] == "triaged"
        assert "tags" in record.curated_fields
        assert record.history.latest().history_user.username == "curator"
    assert Tag.objects.get(name="triaged").recordtag_set.count() == 2


def test_curator_cannot_delete(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.get(reverse("admin:kb_errorrecord_delete", args=[record.pk]))
    assert response.status_code == 403
    page = curator_client.get(reverse("admin:kb_errorrecord_changelist")).content.decode()
    assert "delete_selected" not in page


# --- CSRF and methods (docs/reliability.md#r8-csrf) -----------------------------------
def test_state_changing_admin_views_reject_get(curator_client: Client) -> None:
    record = make_record()
    bench = curator_client.get(reverse("admin:kb_errorrecord_bench", args=[record.pk]))
    assert bench.status_code == 405


def test_state_changing_admin_views_reject_a_bad_csrf_token(csrf_client: Client) -> None:
    record = make_record()
    for url, data in [
        (reverse("admin:kb_errorrecord_bench", args=[record.pk]), {"bench_text": "x"}),
        (change_url(record), form_data(record, documentation="x")),
        (reverse("admin:kb_importjob_upload"), {}),
        (reverse("admin:kb_errorrecord_changelist"), {"action": "retire"}),
        (
            reverse(
                "admin:kb_errorrecord_simple_history",
                args=[record.pk, record.history.latest().history_id],
            ),
            form_data(record, documentation="x"),
        ),
    ]:
        response = csrf_client.post(url, {**data, "csrfmiddlewaretoken": "bogus" * 8})
        assert response.status_code == 403, url
        assert csrf_client.post(url, data).status_code == 403, url
    record.refresh_from_db()
    assert record.documentation != "x"
    assert record.status == Status.PUBLISHED


def test_bench_with_a_valid_csrf_token_answers(csrf_client: Client) -> None:
    record = make_record()
    page = csrf_client.get(change_url(record)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = csrf_client.post(
        reverse("admin:kb_errorrecord_bench", args=[record.pk]),
        {"csrfmiddlewaretoken": token, "message_pattern": "a (.+?) b", "bench_text": "a 1 b"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200


# --- CSP in the admin ----------------------------------------------------------------
def test_admin_scripts_all_carry_the_nonce(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.get(change_url(record))
    csp = response["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    page = response.content.decode()
    assert "htmx" in page
    for tag in re.findall(r"<script\b[^>]*>", page):
        assert f'nonce="{nonce}"' in tag or "src=" in tag, tag
    assert "unsafe-inline" not in csp


# --- create_curator ------------------------------------------------------------------
def test_create_curator_command_makes_a_staff_member_of_the_group(monkeypatch: Any) -> None:
    from django.core.management import call_command

    monkeypatch.setenv("CURATOR_PW", "s3cret-enough")
    call_command("create_curator", "alice", "--password-from-env", "CURATOR_PW", verbosity=0)
    user = User.objects.get(username="alice")
    assert user.is_staff
    assert not user.is_superuser
    assert user.groups.filter(name="Curators").exists()
    assert user.has_perm("kb.change_errorrecord")


def test_create_curator_dry_run_writes_nothing() -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_curator", "bob", "--dry-run", stdout=out)
    assert "Would create user 'bob'" in out.getvalue()
    assert not User.objects.filter(username="bob").exists()


# --- the pattern test bench ----------------------------------------------------------
BENCH_TEXT = (
    "12:00:01 INFO starting\n"
    "12:00:02 ERROR Backfill progress for vnode 42 not found, backfill_state not "
    "initialized properly\n"
)


def _bench(client: Client, record: ErrorRecord, htmx: bool = True, **data: str) -> Any:
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(
        reverse("admin:kb_errorrecord_bench", args=[record.pk]),
        {"message_pattern": record.message_pattern, "error_message": record.error_message,
         "bench_text": BENCH_TEXT, **data},
        headers=headers,
    )  # fmt: skip


def test_bench_highlights_what_the_edited_pattern_matches(curator_client: Client) -> None:
    record = make_record()
    response = _bench(
        curator_client, record, message_pattern=r"Backfill progress for vnode (\d+) not found"
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page  # an htmx fragment
    assert "HX-Request" in response["Vary"]
    assert "<mark>Backfill progress for vnode 42 not found</mark>" in page
    assert '<code class="kb-capture">42</code>' in page
    assert "The matcher can use it" in page
    record.refresh_from_db()
    assert record.message_pattern.startswith("Backfill progress for vnode (.+?)")  # not saved


def test_bench_lists_the_records_the_live_matcher_finds(curator_client: Client) -> None:
    record = make_record()
    other = make_record(
        errorMessage="starting", messagePattern="INFO starting", slug="other-starting"
    )
    page = _bench(curator_client, record).content.decode()
    assert "Records the live matcher finds" in page
    assert record.slug in page
    assert "this record, as saved" in page
    assert other.slug in page or "Near misses" in page or "None." in page


def test_bench_without_htmx_renders_a_whole_page(curator_client: Client) -> None:
    record = make_record()
    response = _bench(curator_client, record, htmx=False)
    page = response.content.decode()
    assert "<html" in page
    assert "<mark>" in page
    assert "Back to the record" in page


def test_bench_explains_a_refused_pattern(curator_client: Client) -> None:
    record = make_record()
    page = _bench(curator_client, record, message_pattern=r"(a)\1 backrefs").content.decode()
    assert "The matcher cannot use it" in page
    assert "backreferences" in page


def test_bench_refuses_an_oversized_sample(curator_client: Client, settings: Any) -> None:
    settings.KB_MAX_PASTE_BYTES = 100
    record = make_record()
    page = _bench(curator_client, record, bench_text="x" * 500).content.decode()
    assert "The sample is 500\xa0bytes; the limit is 100\xa0bytes." in page


def test_bench_survives_a_catastrophic_pattern(curator_client: Client) -> None:
    record = make_record()
    response = _bench(
        curator_client, record, message_pattern="(x+x+)+y", bench_text="x" * 5000 + "\n"
    )
    assert response.status_code == 200


def test_bench_on_the_add_page(curator_client: Client) -> None:
    response = curator_client.post(
        reverse("admin:kb_errorrecord_bench_add"),
        {"message_pattern": "INFO (.+?)$", "bench_text": BENCH_TEXT},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert "<mark>INFO starting</mark>" in response.content.decode()


# --- hostile data and audit trail ---------------------------------------------------
# docs/reliability.md#r6-stored-xss and docs/reliability.md#r18-audit-trail
def test_hostile_record_renders_inert_in_every_admin_page(curator_client: Client) -> None:
    from tests.hostile import hostile_overrides

    record = make_record(**hostile_overrides())
    pages = [
        curator_client.get(reverse("admin:kb_errorrecord_changelist")),
        curator_client.get(reverse("admin:kb_errorrecord_changelist") + "?q=Hostile"),
        curator_client.get(change_url(record)),
        curator_client.get(reverse("admin:kb_errorrecord_history", args=[record.pk])),
        _bench(curator_client, record, bench_text="Hostile thing <script>alert(3)</script> "
               "failed for <img src=x onerror=alert(1)>"),
    ]  # fmt: skip
    for response in pages:
        assert response.status_code == 200
        html = response.content.decode()
        assert "<script>alert" not in html.lower()
        assert "<img src=x" not in html.lower()
        assert "<svg onload" not in html.lower()
        assert not re.search(r'href\s*=\s*["\']?\s*javascript:', html.lower())
    assert "&lt;script&gt;alert(3)" in pages[2].content.decode()  # shown as text


def test_bulk_action_history_rows_equal_changed_records(curator_client: Client) -> None:
    records = [make_record(), make_record(), make_record(tags=["already"])]
    before = {r.pk: r.history.count() for r in records}
    _action(curator_client, "add_tag", records, apply="1", tag="already")
    after = {r.pk: r.history.count() for r in records}
    assert sum(after[k] - before[k] for k in after) == 2
    for record in records[:2]:
        row = record.history.latest()
        assert row.history_user.username == "curator"
        assert row.history_date is not None


# --- validation through the form -----------------------------------------------------
def test_admin_refuses_an_invalid_pattern_with_a_clear_message(curator_client: Client) -> None:
    record = make_record()
    response = curator_client.post(
        change_url(record), form_data(record, message_pattern="Backfill (unclosed")
    )
    assert response.status_code == 200
    assert "The matcher cannot use this pattern" in response.content.decode()
    record.refresh_from_db()
    assert record.message_pattern.startswith("Backfill progress")


def test_admin_collision_needs_the_accept_box(curator_client: Client) -> None:
    other = make_record(
        errorMessage="Lease {} expired early", messagePattern="Lease (.+?) expired early"
    )
    record = make_record(
        errorMessage="Lease {} expired late", messagePattern="Lease (.+?) expired late"
    )
    data = form_data(record, message_pattern="Lease (.+?) expired (.+?)")
    refused = curator_client.post(change_url(record), data)
    assert refused.status_code == 200
    assert other.pk in refused.content.decode()

    accepted = curator_client.post(change_url(record), {**data, "accept_collisions": "on"})
    assert accepted.status_code == 302
    record.refresh_from_db()
    assert record.message_pattern == "Lease (.+?) expired (.+?)"
    page = curator_client.get(accepted["Location"]).content.decode()
    assert "Saved with collisions accepted" in page


def test_admin_warns_about_a_generic_pattern_after_saving(curator_client: Client) -> None:
    record = make_record(errorMessage="bad {}", messagePattern="bad (.+?) x")
    response = curator_client.post(
        change_url(record), form_data(record, message_pattern="bad (.+?)"), follow=True
    )
    assert "The pattern is generic" in response.content.decode()


# --- the Curators group and query counts ----------------------------------------------
def test_curators_group_has_just_the_curation_permissions() -> None:
    from django.contrib.auth.models import Group

    group = Group.objects.get(name="Curators")
    perms = set(group.permissions.values_list("content_type__app_label", "codename"))
    assert perms == {
        ("kb", f"{action}_{model}")
        for model in ("errorrecord", "tag", "importjob")
        for action in ("view", "add", "change")
    } | {("kb", "view_historicalerrorrecord")} | {
        ("sources", f"{action}_source") for action in ("view", "add", "change")
    } | {("sources", "view_learnjob")}


def test_changelists_query_count_does_not_grow_with_rows(
    curator_client: Client, django_assert_max_num_queries: Any
) -> None:
    for _ in range(12):
        make_record()
    for n in range(12):
        ImportJob.objects.create(source=f"f{n}.jsonl", created_by=User.objects.get())
    # The first view after a write also computes what reads every row (the top tags, the
    # filters' distinct values, the page count) and caches it for the revision
    # (kb.curation.admin.filters): cheap queries more, once; the views after it read the cache.
    with django_assert_max_num_queries(40):
        curator_client.get(reverse("admin:kb_errorrecord_changelist"))
    with django_assert_max_num_queries(13):
        curator_client.get(reverse("admin:kb_errorrecord_changelist"))
    with django_assert_max_num_queries(10):
        curator_client.get(reverse("admin:kb_importjob_changelist"))
    with django_assert_max_num_queries(10):
        curator_client.get(reverse("admin:kb_tag_changelist"))


def test_bench_ranks_the_edit_in_the_live_matcher(curator_client: Client) -> None:
    record = make_record()
    page = _bench(
        curator_client, record, message_pattern=r"Backfill progress for vnode (\d+) not found"
    ).content.decode()
    assert "With your edit, the matcher answers" in page
    assert "This record is the first answer." in page
    assert "this record (edited)" in page


def test_bench_ranks_a_record_not_saved_yet(curator_client: Client) -> None:
    response = curator_client.post(
        reverse("admin:kb_errorrecord_bench_add"),
        {"message_pattern": "starting the frobnicator (.+?) now", "bench_text":
         "12:00 INFO starting the frobnicator 7 now\n"},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert "This record is the first answer." in response.content.decode()


def test_tag_names_that_cannot_be_urls_are_refused(curator_client: Client) -> None:
    response = curator_client.post(reverse("admin:kb_tag_add"), {"name": "a/b"})
    assert response.status_code == 200
    assert not Tag.objects.filter(name="a/b").exists()
    ok = curator_client.post(reverse("admin:kb_tag_add"), {"name": "networking"})
    assert ok.status_code == 302
    tag = Tag.objects.get(name="networking")
    assert curator_client.get(reverse("admin:kb_tag_change", args=[tag.pk])).status_code == 200
