"""The README's picture is a real result: the demo data, a real Kafka producer log pasted
into the paste page, the real matcher, and the card it shows.

The test asserts what the picture shows (the card names the record, highlights the
message and gives the fix), so the picture cannot silently turn into an error page. It
writes ``docs/images/paste-result.png`` only with ``KB_WRITE_SCREENSHOTS=1``, so a normal
run leaves the tree as it is:

    KB_WRITE_SCREENSHOTS=1 .venv/bin/pytest -q tests/browser/test_readme_screenshot.py -m browser
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kb.records.importer import import_jsonl
from tests.browser.conftest import after_htmx_settles, assert_clean

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "demo-records.jsonl"
PICTURE = REPO / "docs" / "images" / "paste-result.png"
RECORD = "00f8d25f938beab5"  # RecordTooLargeException, apache/kafka's KafkaProducer
LOG = """\
2026-11-30 09:21:07,412 INFO  [orders-api] o.e.orders.OrderPublisher - publishing order 81723
2026-11-30 09:21:07,418 ERROR [orders-api] o.e.orders.OrderPublisher - send failed for topic orders
org.apache.kafka.common.errors.RecordTooLargeException: The message is 2097312 bytes when \
serialized which is larger than 1048576, which is the value of the max.request.size configuration.
\tat org.apache.kafka.clients.producer.KafkaProducer.doSend(KafkaProducer.java:1036)
\tat org.apache.kafka.clients.producer.KafkaProducer.send(KafkaProducer.java:947)
\tat com.example.orders.OrderPublisher.publish(OrderPublisher.java:58)
"""


@pytest.fixture
def demo(transactional_db: None) -> None:
    with DEMO.open("rb") as lines:
        assert import_jsonl(lines).rejected == 0


def test_a_pasted_producer_log_shows_its_known_error_card(
    page: Any, live_server: Any, demo: None
) -> None:
    page.set_viewport_size({"width": 1200, "height": 800})
    page.goto(live_server.url + "/")
    after_htmx_settles(page)
    page.fill("#paste-text", LOG)
    page.evaluate("window.__settled")
    card = page.locator("#results article.match-card").first
    card.wait_for(timeout=15_000)

    assert page.inner_text("#results .match-count") == "1 known error found"
    assert f'href="/records/{RECORD}/"' in card.inner_html()
    assert "The message is 2097312 bytes when serialized" in card.locator("mark").inner_text()
    assert "max.request.size" in card.inner_text()
    assert "RecordTooLargeException" in card.inner_text()
    assert_clean(page)

    if os.environ.get("KB_WRITE_SCREENSHOTS") == "1":
        # from just below the paste box: the buttons, the count and the card
        page.evaluate(
            "() => window.scrollTo(0, document.querySelector('#paste-text')"
            ".getBoundingClientRect().bottom + window.scrollY + 8)"
        )
        PICTURE.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(PICTURE))
