"""In a real browser, with the real matcher: a paste of an older wording shows its record
and says how those releases word the error, with the words the current message changed;
a traceback whose line numbers are those of a known release says which releases it fits
and puts the record whose wording that release printed first. Records are imported from
dataset lines carrying a ``releaseHistory`` (``tests/release_records.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from kb.matching.holder import holder
from tests import release_records as R
from tests.browser.conftest import assert_clean, screenshot
from tests.factories import import_lines

DASH = "\u2013"  # between a range's first and last release


@pytest.fixture
def lines(transactional_db: None) -> dict[str, str]:
    no_row = R.no_row_line(removedIn="2.1.0")
    node, broker = R.kafka_lines()
    assert import_lines(no_row, node, broker).rejected == 0
    holder.reset()
    return {
        "no_row": no_row["record"]["id"],
        "node": node["record"]["id"],
        "broker": broker["record"]["id"],
    }


def paste(page: Any, live_server: Any, text: str) -> Any:
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill(text)
    page.locator("#paste-text").press("Control+Enter")
    card = page.locator("#results article.match-card").first
    card.wait_for(timeout=10_000)
    return card


def test_an_old_wording_shows_its_record_the_releases_and_the_diff(
    page: Any, live_server: Any, lines: dict[str, str]
) -> None:
    card = paste(page, live_server, f"sqlalchemy.orm.exc.NoResultFound: {R.NO_ROW_OLD}")
    assert page.locator("#results article.match-card").count() == 1
    assert f'href="/records/{lines["no_row"]}/"' in card.inner_html()
    wording = card.locator("[data-wording]")
    text = " ".join(wording.inner_text().split())
    assert f"How releases 1.3.0{DASH}1.3.24 word this error; since 1.4.0 it reads:" in text
    assert R.NO_ROW_NEW in wording.locator("code").first.inner_text()
    diff = wording.locator(".reworded")
    assert diff.locator("del").count() >= 1
    assert "[record: when]" in diff.locator("del").first.text_content()
    assert "for" in diff.locator("ins").first.text_content()
    assert "removed in 2.1.0" in card.locator("[data-removed-in]").inner_text()
    assert card.locator("[data-fit]").count() == 0  # the paste says no release
    screenshot(page, "paste-older-wording")
    assert_clean(page)


def test_a_tracebacks_line_numbers_fit_releases_and_rank_their_wording_first(
    page: Any, live_server: Any, lines: dict[str, str]
) -> None:
    card = paste(page, live_server, R.py_trace(3293))
    fit = card.locator("[data-fit]")
    assert f"Your traceback's line numbers fit releases 1.3.18{DASH}1.3.24" in fit.inner_text()
    assert 'query.py", line 3293' in fit.inner_text()
    # the Kafka pair: without a release, the record that prints this wording today is first;
    # with a trace through the line the other site had in 2.4.0-2.7.2, that site is
    card = paste(page, live_server, R.java_trace(790))
    assert f'href="/records/{lines["node"]}/"' in card.locator("h2").inner_html()
    card = paste(page, live_server, R.java_trace(781))
    assert f'href="/records/{lines["broker"]}/"' in card.locator("h2").inner_html()
    assert f"releases 2.4.0{DASH}2.7.2" in card.locator("[data-fit]").inner_text()
    said = card.locator("[data-wording]").inner_text()
    assert f"How releases 2.0.0{DASH}2.7.2 word this error" in said
    screenshot(page, "paste-release-fit")
    assert_clean(page)
