"""A curator's session in a real browser: log in, edit a solution, try a pattern in the
test bench, save; with zero console errors and zero CSP violations
(docs/reliability.md#r4-csp-violations)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, screenshot
from tests.curation_support import make_curator
from tests.factories import import_lines, make_line

PASSWORD = "correct-horse-battery"
SAMPLE = "Backfill progress for vnode 17 not found, backfill_state not initialized properly"


@pytest.fixture
def fast_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_curator_edits_tries_a_pattern_and_saves(
    page: Any, live_server: Any, fast_hasher: None
) -> None:
    make_curator(password=PASSWORD)
    line = make_line()
    import_lines(line)
    record_id = line["record"]["id"]

    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    screenshot(page, "admin-index")

    page.goto(f"{live_server.url}/admin/kb/errorrecord/")
    page.wait_for_selector("#result_list")
    screenshot(page, "admin-changelist")

    page.goto(f"{live_server.url}/admin/kb/errorrecord/{record_id}/change/")
    config = page.evaluate("htmx.config")  # docs/reliability.md#r5-htmx-config, admin too
    assert config["allowEval"] is False
    assert config["allowScriptTags"] is False
    assert config["selfRequestsOnly"] is True
    assert config["historyCacheSize"] == 0
    solutions = page.locator("#id_solutions")
    solutions.fill("Reinitialise the progress table first\n" + solutions.input_value())
    page.fill(
        "#id_bench_text",
        "WARN Backfill progress for vnode 17 not found, backfill_state not initialized properly",
    )
    page.click("button[name=_bench]")
    page.wait_for_selector("#bench-results mark")
    assert page.locator("#bench-results mark").inner_text().startswith("Backfill progress")
    assert "17" in page.locator("#bench-results .kb-capture").first.inner_text()
    assert page.url.endswith(f"/admin/kb/errorrecord/{record_id}/change/")  # no reload
    screenshot(page, "admin-test-bench")

    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")
    screenshot(page, "admin-saved")
    record = ErrorRecord.objects.get(pk=record_id)
    assert record.solutions[0] == "Reinitialise the progress table first"
    assert record.curated_fields == ["solutions"]

    page.goto(f"{live_server.url}/admin/kb/errorrecord/{record_id}/history/")
    page.wait_for_selector("#change-history")
    screenshot(page, "admin-history")
    assert_clean(page)


def test_upload_page_and_job_page_are_clean(
    page: Any, live_server: Any, fast_hasher: None, tmp_path: Any
) -> None:
    make_curator(password=PASSWORD)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/kb/importjob/upload/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#id_file")
    upload = tmp_path / "two.jsonl"
    upload.write_text("".join(json.dumps(make_line()) + "\n" for _ in range(2)) + "oops\n")
    page.set_input_files("#id_file", str(upload))
    page.click("input[type=submit]")
    page.wait_for_selector(".kb-report")
    assert "Rejected lines" in page.content()
    screenshot(page, "admin-import-job")
    assert_clean(page)


def test_curator_settles_an_import_conflict(page: Any, live_server: Any, fast_hasher: None) -> None:
    from kb.records.services import save_curated

    make_curator(password=PASSWORD)
    line = make_line()
    import_lines(line)
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    record.solutions = ["Curated advice"]
    save_curated(record, changed_attrs=["solutions"])
    line["record"]["solutions"] = ["Dataset advice"]
    import_lines(line, source="update.jsonl")

    page.goto(f"{live_server.url}/admin/login/?next=/admin/kb/errorrecord/{record.pk}/change/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector(".kb-conflicts")
    assert "Dataset advice" in page.locator(".kb-conflicts").inner_text()
    screenshot(page, "admin-conflict")
    page.check("#id_accept_incoming_0")
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")
    record.refresh_from_db()
    assert record.solutions == ["Dataset advice"]
    assert record.conflicts == {}
    page.goto(f"{live_server.url}/admin/kb/errorrecord/?conflicts=no")
    page.wait_for_selector("#result_list")
    screenshot(page, "admin-changelist-filtered")
    assert_clean(page)
