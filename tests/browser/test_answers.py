"""A result as a reader gets it, in a real browser: one count, their values in the card
title, "/" and Tab, the live region, and "Copy link" through the URL fragment.

The share test runs the production server (gunicorn, ``tests/servers.py``) with an access
log that records every request line and referrer, and opens the link in a second browser
context: the result comes back, and neither the log nor any request the browser made
holds the paste.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import after_htmx_settles, assert_clean, watch
from tests.test_pages_answers import MULTI_ERROR_LOG, make_answer_records

# A marker no page prints unless the paste is echoed: the log must never hold it.
MARKER = "cache_size_k7Qz9"
SHARED_LOG = MULTI_ERROR_LOG.replace("cache_size", MARKER)


@pytest.fixture
def records(transactional_db: None) -> dict[str, Any]:
    return make_answer_records()


def paste(page: Any, text: str) -> None:
    after_htmx_settles(page)
    page.fill("#paste-text", text)
    page.evaluate("window.__settled")
    page.locator("#results .results-summary").wait_for()


def result_of(page: Any) -> dict[str, Any]:
    """What a reader sees of a result: the count, card titles, summary rows, suggestions."""
    return {
        "count": page.inner_text("#results .match-count"),
        "cards": page.locator("#results .card-title").all_inner_texts(),
        "rows": page.locator("#results table.summary tbody th a").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        ),
        "card_links": page.locator("#results .card-title a").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        ),
        "suggestions": page.locator("#results .suggestions li").count(),
    }


def test_a_multi_error_paste_shows_one_count_and_the_pasted_values(
    page: Any, live_server: Any, records: dict[str, Any]
) -> None:
    page.goto(live_server.url + "/")
    paste(page, MULTI_ERROR_LOG)
    seen = result_of(page)
    assert seen["count"] == "3 known errors found"
    assert len(seen["cards"]) == 3
    assert sorted(seen["rows"]) == sorted(seen["card_links"])
    assert seen["suggestions"] == 1
    assert page.inner_text("#results .suggestion-count") == "1 other possibility"
    assert "Invalid column: cache_size" in seen["cards"]
    # the template is one click away
    details = page.locator("#results details.template").filter(has_text="{column_name}")
    assert not details.locator("code").is_visible()
    details.locator("summary").click()
    assert details.locator("code").inner_text() == "Invalid column: {column_name}"
    # the live region says the count once the swap has settled
    page.wait_for_function(
        "document.getElementById('live-status').textContent.startsWith('3 known errors found')"
    )
    assert_clean(page)


def test_slash_focuses_the_paste_box_and_tab_walks_the_results_in_order(
    page: Any, live_server: Any, records: dict[str, Any]
) -> None:
    page.goto(live_server.url + "/tags/")
    page.keyboard.press("/")
    page.wait_for_url(live_server.url + "/")
    assert page.evaluate("document.activeElement.id") == "paste-text"
    paste(page, MULTI_ERROR_LOG)
    page.locator("h1").click()  # focus leaves the box; "/" brings it back
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "paste-text"
    assert page.input_value("#paste-text") == MULTI_ERROR_LOG  # "/" typed nothing
    page.keyboard.press("/")  # in the box, "/" is just a character
    assert page.input_value("#paste-text").endswith("/")
    paste(page, MULTI_ERROR_LOG)
    # Tab from the box reaches every card title, in the order the cards are shown
    page.focus("#paste-text")
    order: list[str] = []
    for _ in range(400):
        page.keyboard.press("Tab")
        href = page.evaluate(
            "document.activeElement.closest('.card-title') ? "
            "document.activeElement.getAttribute('href') : null"
        )
        if href in order:
            break  # focus went round the page and came back
        if href:
            order.append(href)
    assert order == result_of(page)["card_links"]
    assert_clean(page)


def test_copy_link_reproduces_the_result_in_a_new_browser_without_the_server_seeing_it(
    browser: Any, records: dict[str, Any], tmp_path: Any
) -> None:
    from tests.servers import Gunicorn

    access = '%(p)s "%(r)s" %(s)s "%(f)s" "%(a)s"'  # request line and referrer, in full
    sent: list[str] = []
    with Gunicorn(workers=1, log_dir=tmp_path, access_format=access) as server:
        first = browser.new_context()
        first.on("request", lambda r: sent.append(r.url + " " + r.headers.get("referer", "")))
        page = watch(first.new_page())
        page.goto(server.base + "/")
        paste(page, SHARED_LOG)
        original = result_of(page)
        assert original["count"] == "3 known errors found"
        page.click("#results .share-btn")
        link = page.locator("#results .share-url")
        link.wait_for()
        url = link.input_value()
        assert url.startswith(server.base + "/#paste=")
        assert MARKER not in url  # compressed, not spelled out
        assert_clean(page)
        first.close()

        second = browser.new_context()
        second.on("request", lambda r: sent.append(r.url + " " + r.headers.get("referer", "")))
        other = watch(second.new_page())
        after_htmx_settles(other)
        other.goto(url)
        other.evaluate("window.__settled")
        other.locator("#results .results-summary").wait_for()
        assert other.input_value("#paste-text") == SHARED_LOG
        assert result_of(other) == original
        assert_clean(other)
        second.close()
    logged = server.access_log.read_text()
    assert "POST /match/" in logged  # the requests were logged, just not the paste
    fragment = url.split("#", 1)[1]
    for line in [logged, *sent]:
        assert MARKER not in line
        assert fragment[6:40] not in line


def test_an_overlong_paste_says_it_cannot_be_shared_instead_of_cutting_it(
    page: Any, live_server: Any, records: dict[str, Any]
) -> None:
    import random

    rng = random.Random(16)
    noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12000))
    page.goto(live_server.url + "/")
    paste(page, MULTI_ERROR_LOG + "\n" + noise)
    page.click("#results .share-btn")
    status = page.locator("#results .share-status")
    status.filter(has_text="too long to share").wait_for()
    assert re.search(r"links carry up to 6,000\)", status.inner_text())
    assert not page.locator("#results .share-url").is_visible()
    assert_clean(page)


def test_without_javascript_sharing_says_it_needs_javascript(
    browser: Any, live_server: Any, records: dict[str, Any]
) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.fill("#paste-text", MULTI_ERROR_LOG)
    page.click("button.primary")
    page.locator(".results-summary").wait_for()
    assert "Sharing a result needs JavaScript" in page.inner_text(".share-nojs")
    assert not page.locator(".share-btn").is_visible()
    context.close()
