"""Browse flows in a real browser: htmx pagination with history, filters, no CSP noise."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from tests.browser.conftest import assert_clean, screenshot
from tests.factories import import_lines, make_line


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    """Live-server tests flush tables between tests, but not the cache table: counts cached
    under a revision number an earlier test also reached would be served here."""
    cache.clear()


def add(n: int, **overrides: Any) -> None:
    prefix = overrides.pop("prefix", "Widget")
    lines = []
    for i in range(n):
        message = f"{prefix} number {i:03d} exploded"
        slug = f"{prefix.lower()}-{i:03d}"  # list order is repo, slug, id
        lines.append(
            make_line(errorMessage=message, messagePattern=message, slug=slug, **overrides)
        )
    assert import_lines(*lines).rejected == 0


def first_row(page: Any) -> Any:
    return page.locator(".record-row .record-link").first


def test_tag_page_paginates_through_htmx_and_back_restores_the_page(
    page: Any, live_server: Any
) -> None:
    add(60, tags=["pager"])
    base = live_server.url + "/tags/pager/"
    page.goto(base)
    expect(first_row(page)).to_have_text("Widget number 000 exploded")
    page.evaluate("window.__sameDocument = true")

    page.locator("nav.pager a[rel=next]").click()
    page.wait_for_url(re.compile(r"/tags/pager/\?page=2$"))
    expect(first_row(page)).to_have_text("Widget number 025 exploded")
    # swapped in place by htmx, not a full page load
    assert page.evaluate("window.__sameDocument === true")
    expect(page.locator("nav.pager a[aria-current=page]")).to_have_text("2")

    page.locator("nav.pager a", has_text="3").click()
    page.wait_for_url(re.compile(r"\?page=3$"))
    expect(first_row(page)).to_have_text("Widget number 050 exploded")

    page.go_back()
    page.wait_for_url(re.compile(r"\?page=2$"))
    expect(first_row(page)).to_have_text("Widget number 025 exploded")
    page.go_back()
    page.wait_for_url(base)
    expect(first_row(page)).to_have_text("Widget number 000 exploded")
    expect(page.locator("nav.pager a[aria-current=page]")).to_have_text("1")
    page.go_forward()
    page.wait_for_url(re.compile(r"\?page=2$"))
    expect(first_row(page)).to_have_text("Widget number 025 exploded")

    # a reload of a pushed URL is the whole page, at the same place
    page.reload()
    expect(first_row(page)).to_have_text("Widget number 025 exploded")
    expect(page.locator("header.site-header")).to_be_visible()
    screenshot(page, "tag-page")
    assert_clean(page)


def test_record_list_filters_and_searches_with_pushed_urls(page: Any, live_server: Any) -> None:
    add(3, severity="warning", prefix="Gadget")
    add(30, severity="error")
    page.goto(live_server.url + "/records/")
    expect(page.locator(".browse-summary")).to_contain_text("33 records")
    page.evaluate("window.__sameDocument = true")

    page.select_option("#f-severity", "warning")
    page.wait_for_url(re.compile(r"/records/\?severity=warning$"))
    expect(page.locator(".browse-summary")).to_contain_text("3 records")
    expect(first_row(page)).to_contain_text("Gadget")

    page.fill("#records-q", "number 002")
    page.press("#records-q", "Enter")
    page.wait_for_url(re.compile(r"/records/\?q=number\+002&severity=warning$"))
    expect(page.locator(".browse-summary")).to_contain_text("1 record")
    assert page.evaluate("window.__sameDocument === true")
    screenshot(page, "record-list")

    page.go_back()
    page.wait_for_url(re.compile(r"severity=warning$"))
    expect(page.locator(".browse-summary")).to_contain_text("3 records")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "record-list-dark")
    assert_clean(page)


def test_tag_index_works_without_javascript(browser: Any, live_server: Any) -> None:
    add(2, tags=["nojs"])
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/tags/")
    page.get_by_role("link", name=re.compile(r"^nojs")).click()
    page.wait_for_url(re.compile(r"/tags/nojs/$"))
    expect(page.locator(".record-row")).to_have_count(2)
    context.close()
