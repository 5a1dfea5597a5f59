"""A record's releases in a real browser: the record page shows its range, its wordings
with their diff and the commit that added it; the record list narrows to a release."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, screenshot
from tests.browser.test_accessibility import AXE, violations
from tests.factories import import_lines, make_line
from tests.test_pages_releases import ADDED, REPO, history_line


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    """Live-server tests flush tables between tests, not the cache table (test_browse_flow)."""
    cache.clear()


def test_the_record_page_shows_the_range_and_the_introducing_commit(
    page: Any, live_server: Any
) -> None:
    line = history_line()
    assert import_lines(line).rejected == 0
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    page.goto(live_server.url + record.get_absolute_url())
    expect(page.locator(".facts .release-span")).to_have_text("In releases 1.3.0\u20132.0.1")
    section = page.get_by_role("region", name="Across releases")
    added = section.locator(".release-commits dd").first
    expect(added).to_contain_text(ADDED["subject"])
    expect(added).to_contain_text("2019-03-04")
    link = added.get_by_role("link")
    expect(link).to_have_attribute("href", f"https://github.com/{REPO}/commit/{ADDED['sha']}")
    older = section.locator(".wording").first
    expect(older).to_contain_text("How releases 1.3.0\u20131.3.24 word it:")
    expect(older.locator("del").first).to_have_text("[then: for]")
    expect(older.locator("ins").first).to_contain_text("when")
    # the older locations are folded until asked for
    earlier = section.locator("details.locations-older")
    expect(earlier.locator("li").first).to_be_hidden()
    earlier.locator("summary").click()
    expect(earlier.locator("li").first).to_be_visible()
    screenshot(page, "record-page-releases")
    assert_clean(page)


def test_the_record_list_narrows_to_a_release(page: Any, live_server: Any) -> None:
    lines = [
        make_line(repo=REPO, errorMessage=f"{slug} failed", messagePattern=f"{slug} failed",
                  slug=slug, firstRelease=first, lastRelease=last)
        for slug, first, last in [
            ("old-only", "1.3.0", "1.3.24"), ("across", "1.3.5", "2.0.1"),
            ("from-14", "1.4.0", "1.4.52"), ("no-history", None, None),
        ]
    ]  # fmt: skip
    assert import_lines(*lines).rejected == 0
    page.goto(live_server.url + "/records/?repo=" + REPO)
    expect(page.locator(".browse-summary")).to_contain_text("4 records")
    page.select_option("#f-release", "1.4.x")
    page.wait_for_url(re.compile(r"/records/\?repo=sqlalchemy%2Fsqlalchemy&release=1\.4\.x$"))
    expect(page.locator(".browse-summary")).to_contain_text(f"2 records that exist in {REPO} 1.4.x")
    rows = page.locator(".record-row .record-link")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("across failed")
    expect(page.locator("#f-release option:checked")).to_have_text("1.4.x")
    page.select_option("#f-release", "1.3.24")
    expect(page.locator(".browse-summary")).to_contain_text("2 records that exist")
    expect(rows.nth(1)).to_contain_text("old-only failed")
    assert_clean(page)


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is not installed: run `make axe` (npm ci)")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_release_parts_pass_axe(browser: Any, live_server: Any, scheme: str) -> None:
    """The release section and the release filter, under axe like the other pages
    (test_accessibility: a context of its own that lets axe be injected)."""
    line = history_line()
    assert import_lines(line).rejected == 0
    context = browser.new_context(bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(live_server.url + f"/records/{line['record']['id']}/")
        page.locator("details.locations-older summary").click()
        assert violations(page) == []
        page.goto(live_server.url + f"/records/?repo={REPO}&release=1.4")
        expect(page.locator("#f-release")).to_be_visible()
        assert violations(page) == []
    finally:
        context.close()
