"""Paste → match in a real browser: results without a reload, keyboard, upload, no-JS, errors.

The first test runs the real matcher on the seed record; the others replace it with a
stub (the live server runs in this process) so that they test the page's behaviour.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kb.matching.holder import MatchResult, MatchView
from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, csp_violations, screenshot, wait_until
from tests.factories import SEED, import_lines

LINE = (
    "2026-11-30T03:12:44.123Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
FIRST_SOLUTION = "Verify the progress table contains one row per vnode"


@pytest.fixture
def seed(transactional_db: None) -> ErrorRecord:
    assert import_lines(SEED).rejected == 0
    return ErrorRecord.objects.get(pk="c36bebe8cdedec02")


@pytest.fixture
def stub_matcher(monkeypatch: pytest.MonkeyPatch, seed: ErrorRecord) -> list[str]:
    """The seed matches wherever "Backfill" appears; returns the texts it matched. Like the
    real matcher it refuses a text past ``max_bytes`` before doing any work."""
    from kb.engine import MatchReport, PasteTooLarge

    seen: list[str] = []

    def fake(text: str, *, max_bytes: int | None = None) -> MatchResult:
        size = len(text.encode("utf-8", "replace"))
        if max_bytes is not None and size > max_bytes:
            raise PasteTooLarge(size, max_bytes)
        seen.append(text)
        matches = []
        if "Backfill" in text:
            start = text.index("Backfill")
            end = text.find("\n", start)
            end = len(text) if end == -1 else end
            line = text.count("\n", 0, start) + 1
            matches.append(
                MatchView(seed, line, (start, end), text[start:end], ["17"], 0.97, "stub", 70, 0.9)
            )
        normalised = SimpleNamespace(text=text, steps=[])
        report = MatchReport([], [], [], normalised, 1.0)
        return MatchResult(matches, [], [], report, 1.0)

    monkeypatch.setattr("kb.matching.views.match_text", fake)
    monkeypatch.setattr("kb.matching.holder.match_text", fake)  # an uploaded log's path
    return seen


def test_pasting_a_timestamped_message_shows_the_seed_card_without_reload(
    page: Any, live_server: Any, context: Any, seed: ErrorRecord
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + "/")
    assert page.evaluate("document.activeElement.id") == "paste-text"
    page.evaluate("window.__sameDocument = true")
    # a real paste from the clipboard into the focused textarea
    page.evaluate("text => navigator.clipboard.writeText(text)", LINE)
    page.keyboard.press("Control+V")
    card = page.locator("#results article.match-card").first
    card.wait_for(timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True  # no page reload
    assert 'href="/records/c36bebe8cdedec02/"' in card.inner_html()
    assert FIRST_SOLUTION in card.inner_text()
    assert "Backfill progress for vnode 17" in card.locator("mark").inner_text()
    # the paste went in a POST body, and nothing of it is kept client-side
    assert page.url == live_server.url + "/"
    assert page.evaluate("sessionStorage.getItem('htmx-history-cache')") is None
    assert page.evaluate("localStorage.getItem('htmx-history-cache')") is None
    screenshot(page, "paste-results")
    assert_clean(page)


def test_ctrl_enter_matches_at_once(page: Any, live_server: Any, stub_matcher: list[str]) -> None:
    page.goto(live_server.url + "/")
    # set the value without an input event, so only the shortcut can send it
    page.evaluate(f"document.getElementById('paste-text').value = {LINE!r}")
    page.locator("#paste-text").press("Control+Enter")
    page.locator("#results article.match-card").wait_for(timeout=5_000)
    assert stub_matcher == [LINE]
    assert_clean(page)


def test_uploading_a_log_file_matches_it(
    page: Any, live_server: Any, stub_matcher: list[str]
) -> None:
    page.goto(live_server.url + "/")
    log = "boot\nstill fine\n" + LINE + "\n"
    page.locator("#log-file").set_input_files(
        files=[{"name": "app.log", "mimeType": "text/plain", "buffer": log.encode()}]
    )
    page.locator("#results article.match-card").wait_for(timeout=5_000)
    assert page.locator("#paste-text").input_value() == log  # small files land in the textarea
    assert "Loaded app.log" in page.locator("#paste-note").inner_text()
    assert "line 3" in page.locator(".matched-line").inner_text()
    assert_clean(page)


def test_dropping_a_log_file_matches_it(
    page: Any, live_server: Any, stub_matcher: list[str]
) -> None:
    page.goto(live_server.url + "/")
    page.evaluate(
        """text => {
          const dt = new DataTransfer();
          dt.items.add(new File([text], "dropped.log", {type: "text/plain"}));
          const zone = document.getElementById("drop-zone");
          const init = {dataTransfer: dt, bubbles: true, cancelable: true};
          zone.dispatchEvent(new DragEvent("dragover", init));
          zone.dispatchEvent(new DragEvent("drop", init));
        }""",
        "first\n" + LINE,
    )
    page.locator("#results article.match-card").wait_for(timeout=5_000)
    # form submission sends textarea line breaks as CRLF; the matcher takes either
    assert [t.replace("\r\n", "\n") for t in stub_matcher] == ["first\n" + LINE]
    assert "Loaded dropped.log" in page.locator("#paste-note").inner_text()
    assert page.locator("#drop-zone.dragging").count() == 0
    assert_clean(page)


def test_a_paste_too_big_for_the_text_field_is_sent_as_a_log(
    page: Any, live_server: Any, context: Any, settings: Any, stub_matcher: list[str]
) -> None:
    settings.KB_MAX_PASTE_BYTES = 2000
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + "/")
    big = "\n".join(f"2026-11-30T03:12:{i % 60:02d}Z INFO all good {i}" for i in range(100))
    big += "\n" + LINE
    assert len(big) > 2000
    page.evaluate("text => navigator.clipboard.writeText(text)", big)
    page.keyboard.press("Control+V")
    page.locator("#results article.match-card").wait_for(timeout=5_000)
    assert stub_matcher == [big]  # the whole paste, uncut, as an upload
    assert page.locator("#paste-text").input_value() == ""
    assert "as a log file" in page.locator("#paste-note").inner_text()
    assert "line 101" in page.locator(".matched-line").inner_text()
    assert_clean(page)


def test_no_known_error_state(page: Any, live_server: Any, stub_matcher: list[str]) -> None:
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill("everything is fine, nothing to see")
    page.get_by_text("No known error in this text").wait_for(timeout=5_000)
    assert page.locator("details.normalised[open]").count() == 1
    screenshot(page, "paste-no-match")
    assert_clean(page)


def test_form_works_without_javascript(
    browser: Any, live_server: Any, stub_matcher: list[str]
) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill(LINE)
    page.get_by_role("button", name="Find known errors").click()
    page.wait_for_url(live_server.url + "/match/")
    assert FIRST_SOLUTION in page.locator("#results article.match-card").inner_text()
    assert page.locator("#paste-text").input_value() == LINE
    assert page.get_by_role("button", name="Copy as Markdown").count() == 0  # needs JS
    screenshot(page, "paste-results-nojs")
    context.close()


def test_server_error_during_a_paste_shows_a_plain_message(
    page: Any, live_server: Any, monkeypatch: pytest.MonkeyPatch, transactional_db: None
) -> None:
    def boom(text: str, *, max_bytes: int | None = None) -> None:
        raise RuntimeError("internal detail: SECRET_KEY=hunter2")

    monkeypatch.setattr("kb.matching.views.match_text", boom)
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill("anything")
    alert = page.locator("#results [role=alert]")
    alert.wait_for(timeout=5_000)
    assert "Something went wrong on our side" in alert.inner_text()
    assert "hunter2" not in page.content()
    assert csp_violations(page) == []


def test_too_large_paste_gets_a_friendly_message(
    page: Any, live_server: Any, settings: Any, stub_matcher: list[str]
) -> None:
    settings.KB_MAX_PASTE_BYTES = 2000
    settings.KB_MAX_LOG_BYTES = 4000
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill("x" * 2500)  # typed/filled text is not a paste event
    page.get_by_text("That is more than we can match at once").wait_for(timeout=5_000)
    assert stub_matcher == []
    screenshot(page, "paste-too-large")
    assert csp_violations(page) == []


def test_the_app_cannot_be_framed(page: Any, live_server: Any, transactional_db: None) -> None:
    page.set_content(f'<iframe id="f" src="{live_server.url}/"></iframe>')
    wait_until(
        page,
        lambda: any("frame-ancestors" in m or "X-Frame-Options" in m for m in page.console_errors),
        "the framing refusal",
    )
    frame = page.frame_locator("#f")
    assert frame.locator("#paste-text").count() == 0
