"""Record page in a real browser: highlighted snippet, line 80 marked, hostile text inert."""

from __future__ import annotations

from typing import Any

from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, csp_violations, screenshot
from tests.factories import SEED, import_lines, make_line
from tests.hostile import hostile_overrides

SEED_URL = "/records/c36bebe8cdedec02/"


def test_record_page_shows_the_snippet_with_line_80_marked(page: Any, live_server: Any) -> None:
    assert import_lines(SEED).rejected == 0
    page.goto(live_server.url + SEED_URL)
    marked = page.locator("#snippet-code mark.error-line")
    assert marked.count() == 1
    assert marked.get_attribute("id") == "L80"
    assert marked.locator(".ln").inner_text() == "80"
    assert "bail!" in marked.inner_text()
    assert page.locator("#snippet-code .ln").first.inner_text() == "62"
    assert page.locator("#snippet-code .ln").last.inner_text() == "98"
    # highlighted: Rust tokens carry Pygments classes, styled from app.css
    keyword = page.locator("#snippet-code .k").first
    assert keyword.evaluate("e => getComputedStyle(e).color") != page.locator(
        "#snippet-code"
    ).evaluate("e => getComputedStyle(e).color")
    # the error line is visibly set apart
    background = marked.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")
    assert page.locator("ol li").count() >= 3  # numbered solutions
    # copy buttons appear with JavaScript (hidden without it)
    assert page.locator("button.copy-btn:visible").count() == 4
    config = page.evaluate(
        "({allowEval: htmx.config.allowEval, allowScriptTags: htmx.config.allowScriptTags,"
        " selfRequestsOnly: htmx.config.selfRequestsOnly,"
        " includeIndicatorStyles: htmx.config.includeIndicatorStyles,"
        " historyCacheSize: htmx.config.historyCacheSize})"
    )
    assert config == {
        "allowEval": False,
        "allowScriptTags": False,
        "selfRequestsOnly": True,
        "includeIndicatorStyles": False,
        "historyCacheSize": 0,
    }
    screenshot(page, "record-page")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "record-page-dark")
    assert_clean(page)


def test_copy_button_copies_code_without_line_numbers(
    page: Any, live_server: Any, context: Any
) -> None:
    assert import_lines(SEED).rejected == 0
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + SEED_URL)
    page.locator('button[data-copy-target="snippet-code"]').click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("            )\n        })")
    assert "62" not in copied.split("\n")[0]
    assert "where the error is raised" not in copied
    assert_clean(page)


def test_hostile_record_is_inert_in_the_browser(page: Any, live_server: Any) -> None:
    line = make_line(**hostile_overrides())
    assert import_lines(line).rejected == 0
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    dialogs: list[str] = []
    requests: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(live_server.url + record.get_absolute_url())
    page.wait_for_load_state("networkidle")  # any hx-trigger=load request has run by now
    assert dialogs == []
    assert not [u for u in requests if "/evil" in u]
    injected = page.evaluate(
        """() => ({
          inlineScripts: document.querySelectorAll('script:not([src])').length,
          svg: document.querySelectorAll('svg').length,
          img: document.querySelectorAll('img').length,
          hx: document.querySelectorAll('[hx-get="/evil"], [hx-trigger]').length,
          bold: document.querySelectorAll('b[onmouseover]').length,
          jsLinks: document.querySelectorAll('a[href^="javascript:"]').length,
        })"""
    )
    assert injected == {
        "inlineScripts": 0,
        "svg": 0,
        "img": 0,
        "hx": 0,
        "bold": 0,
        "jsLinks": 0,
    }
    assert '<script>alert("xss")</script>' in page.locator("main").inner_text()
    screenshot(page, "record-page-hostile")
    assert csp_violations(page) == []
    assert_clean(page)


def test_unknown_record_page_is_friendly(page: Any, live_server: Any) -> None:
    response = page.goto(live_server.url + "/records/nope/")
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Page not found"
    screenshot(page, "not-found")
    # the browser logs the 404 of the document itself; nothing else may appear
    assert csp_violations(page) == []
    assert [m for m in page.console_errors if "404" not in m] == []
