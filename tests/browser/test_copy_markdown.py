"""The "Copy as Markdown" button on a result: the server renders the summary into a
hidden element, the button copies it (without JavaScript there is no button to press:
``test_paste_flow.test_form_works_without_javascript``)."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from tests.browser.conftest import assert_clean
from tests.factories import SEED, import_lines

LINE = (
    "2026-11-30T03:12:44.123Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
LOG = f"boot\n{LINE}\nretry\n{LINE.replace('17', '18')}\n"


@pytest.fixture
def seed(transactional_db: None) -> None:
    assert import_lines(SEED).rejected == 0


def api_markdown(base: str, text: str) -> str:
    request = urllib.request.Request(  # noqa: S310 - the live test server
        f"{base}/api/match?format=markdown", data=text.encode(), method="POST",
        headers={"Content-Type": "text/plain; charset=utf-8"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return response.read().decode()


@pytest.mark.usefixtures("seed")
def test_copy_as_markdown_puts_the_ticket_summary_on_the_clipboard(
    page: Any, live_server: Any, context: Any
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill(LOG)
    button = page.get_by_role("button", name="Copy as Markdown")
    button.wait_for(timeout=10_000)
    button.click()
    page.get_by_role("button", name="Copied").wait_for(timeout=5_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("### 1 known error in this log")
    assert f"({live_server.url}/records/c36bebe8cdedec02/)" in copied
    assert f"`{LINE}`" in copied
    # the page copies what the API renders for the same text: one renderer
    assert copied == api_markdown(live_server.url, LOG)
    assert_clean(page)
