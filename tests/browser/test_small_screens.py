"""No page scrolls sideways on a phone (320 and 390 px wide), whatever long paths and
identifiers it shows: they wrap, or scroll inside their own box (docs/reliability.md).

Each page is loaded with long real content (the demo records, a Kafka client's Java stack
trace with its long package paths, a gap with a long template in the curators' work queue)
and ``document.documentElement.scrollWidth`` is compared with the viewport's width. A failure
names the elements that stick out, so the CSS rule to fix is findable.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from kb.loop.models import Gap
from tests.browser.conftest import assert_clean, screenshot
from tests.browser.test_learning_loop import log_in
from tests.ci_logs import KAFKA_TRACE
from tests.curation_support import make_curator
from tests.factories import FIXTURES, import_lines

WIDTHS = (320, 390)
PASSWORD = "correct-horse-battery"
LONG_PATH_RECORD = "317a74324fd279fb"  # ...OAuthBearerUnsecuredValidatorCallbackHandler.java
UNKNOWN_JAVA = (
    'Exception in thread "main" com.example.platform.orders.enrichment.infrastructure.'
    "OrderEnrichmentRequestedEventConsumerConfigurationAutoConfigurationException: "
    "no enrichment strategy registered for com.example.platform.orders.enrichment.v2."
    "OrderEnrichmentRequestedEventTopicPartitionAssignmentStrategyFactoryBean\n"
    "\tat com.example.platform.orders.enrichment.infrastructure.messaging.kafka.consumer."
    "OrderEnrichmentRequestedEventConsumer.onMessage(OrderEnrichmentRequestedEventConsumer.java:88)\n"
)

# The document's width beside the viewport's, and what sticks out past the viewport (but
# not what sits inside a box that scrolls on its own, which is allowed to be wider).
MEASURE = """() => {
  const root = document.documentElement;
  const width = root.clientWidth;
  const scrolls = el => {
    for (let p = el.parentElement; p && p !== root; p = p.parentElement) {
      const s = getComputedStyle(p).overflowX;
      if ((s === 'auto' || s === 'scroll' || s === 'hidden') && p.clientWidth <= width) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > width + 1 && !scrolls(el)) {
      const cls = typeof el.className === 'string' ? el.className.trim() : '';
      const name = el.tagName.toLowerCase() + (cls ? '.' + cls.split(/\\s+/).join('.') : '');
      out.push(name + ' right=' + Math.round(r.right));
    }
  }
  return {scrollWidth: root.scrollWidth, width: width, wide: out.slice(0, 8)};
}"""


@pytest.fixture
def demo(transactional_db: None) -> None:
    lines = (FIXTURES / "demo-records.jsonl").read_bytes().splitlines(keepends=True)
    assert import_lines(*lines).rejected == 0


def fits(page: Any, what: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        page.wait_for_timeout(50)
        got = page.evaluate(MEASURE)
        if got["scrollWidth"] > got["width"]:
            screenshot(page, f"small-screen-{what}-{width}")
        assert got["scrollWidth"] <= got["width"], f"{what} at {width} px: {got}"


def test_public_pages_do_not_scroll_sideways(page: Any, live_server: Any, demo: None) -> None:
    base = live_server.url
    page.set_viewport_size({"width": 390, "height": 800})

    page.goto(base + "/")
    page.fill("#paste-text", KAFKA_TRACE)
    page.locator("#results .card").first.wait_for(timeout=15_000)
    fits(page, "paste-results")

    page.goto(base + "/")
    page.fill("#paste-text", UNKNOWN_JAVA)
    page.locator("#results .no-match").wait_for(timeout=15_000)
    fits(page, "paste-no-match")

    page.goto(f"{base}/records/{LONG_PATH_RECORD}/")
    fits(page, "record")
    tag = page.locator(".tags a.tag").first.get_attribute("href")

    for what, path in (
        ("list", "/records/"),
        ("list-filtered", "/records/?repo=apache/kafka&severity=error"),
        ("search", "/records/?q=OAuthBearer"),
        ("tags", "/tags/"),
        ("tag", tag),
    ):
        page.goto(base + path)
        fits(page, what)
    assert_clean(page)


def test_the_curators_work_queue_does_not_scroll_sideways(
    browser: Any, live_server: Any, demo: None, settings: Any
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    make_curator(password=PASSWORD)
    now = timezone.now()
    template = UNKNOWN_JAVA.splitlines()[0].replace("main", "<*>")
    Gap.objects.create(
        key="long-java",
        template=template,
        count=4,
        first_seen=now - timedelta(days=1),
        last_seen=now,
        samples=[UNKNOWN_JAVA.splitlines()[0]],
    )
    page = browser.new_page()
    log_in(page, live_server.url)
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(live_server.url + "/admin/loop/gap/queue/")
    fits(page, "work-queue")
