"""The learning loop in a real browser (issue 12's "Done means"): an unknown error reported
from two browsers folds into one gap that a curator turns into a record, which then
matches the paste and closes the gap; a proposal stays private until a curator accepts it,
then survives a re-import and is exported; a vote changes what the curator sees, once per
browser and day. Every page ends without console errors or CSP violations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from kb.loop.models import Gap, Proposal, Vote
from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, screenshot, watch
from tests.curation_support import make_curator
from tests.factories import SEED, import_lines, make_line

PASSWORD = "correct-horse-battery"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
OTHER_KEY = "AKIAJ5Q7R2XLMNBVCDEF"
DSN_PASSWORD = "s3cr3t-Pa55word"
QUEUE = "/admin/loop/gap/queue/"


def unknown_error(order: int, email: str, password: str, key: str) -> str:
    return (
        "2026-01-01 10:00:00 INFO starting worker\n"
        f"2026-01-01 10:00:01 ERROR Widget frobnication failed for order {order} owned by "
        f"{email}: upstream postgres://app:{password}@db.internal:5432/orders refused key "
        f"{key}\n"
    )


FIRST = unknown_error(42, "jane.doe@example.org", DSN_PASSWORD, AWS_KEY)
SECOND = unknown_error(7, "bob@example.net", "hunter2-Other", OTHER_KEY)
FIRST_SECRETS = (AWS_KEY, DSN_PASSWORD, "jane.doe@example.org")


@pytest.fixture
def fast_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def seed(transactional_db: None) -> ErrorRecord:
    assert import_lines(SEED).rejected == 0
    return ErrorRecord.objects.get(pk="c36bebe8cdedec02")


def new_browser(browser: Any) -> Any:
    """A second visitor: its own context, so its own cookies (its own voter id)."""
    return watch(browser.new_context().new_page())


@pytest.fixture
def curator(live_server: Any, browser: Any, fast_hasher: None, transactional_db: None) -> Any:
    """A curator's own browser, logged in to the admin."""
    make_curator(password=PASSWORD)
    page = new_browser(browser)
    log_in(page, live_server.url)
    return page


def log_in(page: Any, base: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def paste(page: Any, base: str, text: str) -> None:
    page.goto(base + "/")
    page.fill("#paste-text", text)
    page.locator("#results .results-summary").wait_for(timeout=10_000)


def report(page: Any, base: str, text: str) -> str:
    """Paste, click "Report", check the preview, send; returns the preview's text."""
    paste(page, base, text)
    page.get_by_role("button", name="Report this unknown error").click()
    preview = page.locator("[data-testid=report-preview]")
    preview.wait_for(timeout=10_000)
    shown = preview.inner_text()
    page.get_by_role("button", name="Send this report").click()
    page.locator("#loop-report [data-gap]").wait_for(timeout=10_000)
    return shown


def gap_count(curator: Any, base: str) -> str:
    curator.goto(base + QUEUE)
    return curator.locator("#gaps tr[data-gap] td.count").first.inner_text()


def test_an_unknown_error_reported_twice_becomes_a_record_that_closes_its_gap(
    page: Any, live_server: Any, browser: Any, curator: Any, seed: ErrorRecord
) -> None:
    base = live_server.url

    shown = report(page, base, FIRST)
    for secret in FIRST_SECRETS:
        assert secret not in shown
    assert "Widget frobnication failed for order" in shown
    assert "starting worker" not in shown
    screenshot(page, "loop-report-sent")
    assert gap_count(curator, base) == "1"

    other = new_browser(browser)
    report(other, base, SECOND)
    assert "reported 2 times" in other.locator("#loop-report").inner_text()
    assert gap_count(curator, base) == "2"
    gap = Gap.objects.get()
    for secret in (*FIRST_SECRETS, OTHER_KEY, "bob@example.net"):
        assert secret not in json.dumps(gap.samples) + gap.template
    screenshot(curator, "loop-work-queue")

    curator.get_by_role("link", name="Create a record from this gap").first.click()
    curator.wait_for_selector("#id_message_pattern")
    # the admin focuses its first field once the page has loaded: typing before that could
    # land in the focused field instead of the one filled
    curator.wait_for_load_state("load")
    assert curator.locator("#id_error_message").input_value() == gap.template.replace("<*>", "{}")
    assert curator.locator("#id_status").input_value() == "draft"
    curator.fill("#id_repo", "acme/widgets")
    curator.fill("#id_file_path", "widgets/frob.py")
    for field in ("line_number", "source_code_start", "source_code_end"):
        curator.fill(f"#id_{field}", "1")
    curator.fill("#id_error_type", "exception")
    curator.select_option("#id_status", "published")
    curator.click("input[name=_save]")
    curator.wait_for_selector(".messagelist .success")
    record = ErrorRecord.objects.get(pk=f"gap-{gap.pk}")
    assert record.status == "published"
    assert record.message_pattern
    for sample in gap.samples:  # the derived pattern matches both reports
        assert re.search(record.message_pattern, sample), sample

    paste(page, base, FIRST)
    card = page.locator("#results article.match-card").first
    card.wait_for(timeout=10_000)
    assert f"/records/{record.pk}/" in card.inner_html()

    curator.goto(base + QUEUE)
    closed = curator.locator("#closed tr[data-gap]")
    closed.first.wait_for(timeout=10_000)
    assert curator.locator(f'#closed [data-closed-by="{record.pk}"]').count() == 1
    assert curator.locator("#gaps tr[data-gap]").count() == 0
    screenshot(curator, "loop-gap-closed")
    for p in (page, other, curator):
        assert_clean(p)


def test_a_proposal_stays_private_until_accepted_then_survives_reimport_and_export(
    page: Any, live_server: Any, curator: Any, tmp_path: Path
) -> None:
    base = live_server.url
    bare = {
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": [],
    }
    line = make_line(**bare)
    assert import_lines(line).rejected == 0
    record_id = line["record"]["id"]
    text = "Restart the backfill after re-creating the progress table"

    page.goto(f"{base}/records/{record_id}/")
    assert "Nobody has written up this error yet" in page.content()
    page.select_option("#propose-field", "solutions")
    page.fill("#propose-text", text)
    page.get_by_role("button", name="Send for review").click()
    page.get_by_text("A curator will read your proposal").wait_for(timeout=10_000)
    page.reload()
    assert text not in page.content()
    assert Proposal.objects.get().status == "pending"

    curator.goto(base + QUEUE)
    row = curator.locator("#proposals tr[data-proposal]")
    assert text in row.inner_text()
    row.get_by_role("button", name="Accept").click()
    curator.wait_for_selector(".messagelist .success")
    assert curator.locator("#proposals tr[data-proposal]").count() == 0

    page.goto(f"{base}/records/{record_id}/")
    assert text in page.locator(".solutions").inner_text()
    screenshot(page, "loop-proposal-accepted")

    newer = make_line(
        **{**bare, "solutions": ["The dataset's own step"]}, datasetVersion="2027-01-01T00:00:00Z"
    )
    newer["record"]["id"] = record_id
    newer["record"]["slug"] = line["record"]["slug"]
    import_report = import_lines(newer)
    assert import_report.rejected == 0
    record = ErrorRecord.objects.get(pk=record_id)
    assert text in record.solutions
    assert "solutions" in record.conflicts

    out = tmp_path / "export.jsonl"
    call_command("export_records", str(out))
    exported = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    mine = next(x for x in exported if x["record"]["id"] == record_id)
    assert text in mine["record"]["solutions"]
    for p in (page, curator):
        assert_clean(p)


def test_a_vote_changes_the_counts_a_curator_sees_once_per_browser_and_day(
    page: Any, live_server: Any, browser: Any, curator: Any, seed: ErrorRecord
) -> None:
    base = live_server.url

    def complaints() -> str:
        curator.goto(base + QUEUE)
        rows = curator.locator(f'#complaints tr[data-record="{seed.pk}"] td.count')
        return rows.inner_text() if rows.count() else "0"

    assert complaints() == "0"
    page.goto(f"{base}/records/{seed.pk}/")
    form = page.locator("#record-feedback")
    form.get_by_role("button", name="Didn't help").click()
    status = form.locator(".loop-feedback-status")
    status.get_by_text("counted").wait_for(timeout=10_000)
    assert complaints() == "1"

    form.get_by_role("button", name="Didn't help").click()
    status.get_by_text("Already counted today").wait_for(timeout=10_000)
    assert complaints() == "1"

    # A step's own button submits the same form with its step.
    page.locator('.step-vote[data-step="2"] button[value="fixed:2"]').click()
    status.get_by_text("for step 2").wait_for(timeout=10_000)
    assert Vote.objects.filter(record=seed, step=2, verdict="fixed").count() == 1
    # "Didn't help" on one step is about that step: the record's complaints stay as they are.
    page.locator('.step-vote[data-step="1"] button[value="not_fixed:1"]').click()
    status.get_by_text("for step 1").wait_for(timeout=10_000)
    assert Vote.objects.filter(record=seed, step=1, verdict="not_fixed").count() == 1
    assert complaints() == "1"

    # From the paste page's card, in another browser: a second complaint.
    other = new_browser(browser)
    paste(
        other,
        base,
        "ERROR Backfill progress for vnode 17 not found, backfill_state not initialized properly",
    )
    card = other.locator("#results article.match-card").first
    card.get_by_role("button", name="Wrong match").click()
    card.locator(".loop-feedback-status").get_by_text("counted").wait_for(timeout=10_000)
    assert complaints() == "2"
    screenshot(curator, "loop-complaints")
    for p in (page, other, curator):
        assert_clean(p)


def test_reporting_and_voting_work_without_javascript(
    live_server: Any, browser: Any, seed: ErrorRecord
) -> None:
    base = live_server.url
    page = browser.new_context(java_script_enabled=False).new_page()
    page.goto(base + "/")
    page.fill("#paste-text", FIRST)
    page.get_by_role("button", name="Find known errors").click()
    page.get_by_role("button", name="Report this unknown error").click()
    shown = page.locator("[data-testid=report-preview]").inner_text()
    for secret in FIRST_SECRETS:
        assert secret not in shown
    page.get_by_role("button", name="Send this report").click()
    page.get_by_text("Thank you: reported").wait_for(timeout=10_000)
    assert Gap.objects.get().count == 1

    page.goto(f"{base}/records/{seed.pk}/")
    page.locator("#record-feedback").get_by_role("button", name="This fixed it").click()
    page.get_by_text("counted").wait_for(timeout=10_000)
    assert Vote.objects.filter(record=seed, verdict="fixed").count() == 1
