"""In a real browser, with the real matcher: a reworded message's suggestion shows which
words changed, and a whole log with a chained exception lists its root cause first and
says why."""

from __future__ import annotations

from typing import Any

import pytest

from kb.records.models import ErrorRecord
from tests.browser.conftest import assert_clean, screenshot
from tests.factories import make_record

SA_PASTE = (
    "2026-11-30 10:00:02,118 ERROR [alembic.env] sqlalchemy.exc.ArgumentError: "
    "Could not parse SQLAlchemy URL from string 'postgres//kb@db/kb'"
)
JAVA_LOG = "\n".join(
    [
        "2026-11-30 10:00:01.002  INFO 4242 --- [main] o.s.b.w.e.TomcatWebServer : started",
        "2026-11-30 10:00:02.118 ERROR 4242 --- [exec-1] o.a.c.c.C : Servlet threw exception",
        "org.springframework.transaction.CannotCreateTransactionException: "
        "Could not open JPA EntityManager for transaction",
        "\tat org.springframework.orm.jpa.JpaTransactionManager.doBegin(JpaTM.java:467)",
        "Caused by: org.hibernate.exception.JDBCConnectionException: "
        "Unable to acquire JDBC Connection",
        "\tat org.hibernate.exception.internal.SQLStateDelegate.convert(SQLState.java:112)",
        "\t... 12 common frames omitted",
        "Caused by: org.postgresql.util.PSQLException: Connection to localhost:5432 refused. "
        "Check that the hostname and port are correct and that the postmaster is accepting "
        "TCP/IP connections.",
        "\tat org.postgresql.Driver.connect(Driver.java:270)",
        "2026-11-30 10:00:02.300  INFO 4242 --- [exec-2] c.e.web.Health : health check ok",
    ]
)


@pytest.fixture
def records(transactional_db: None) -> dict[str, ErrorRecord]:
    return {
        "sa": make_record(
            errorMessage="Could not parse rfc1738 URL from string '%s'",
            messagePattern="Could not parse rfc1738 URL from string '(.+?)'",
        ),
        "jpa": make_record(
            errorMessage="Could not open JPA EntityManager for transaction",
            messagePattern="Could not open JPA EntityManager for transaction",
        ),
        "jdbc": make_record(
            errorMessage="Unable to acquire JDBC Connection",
            messagePattern="Unable to acquire JDBC Connection",
        ),
        "psql": make_record(
            errorMessage="Connection to {0} refused. Check that the hostname and port are "
            "correct and that the postmaster is accepting TCP/IP connections.",
            messagePattern=r"Connection to (.+?) refused\. Check that the hostname and port "
            r"are correct and that the postmaster is accepting TCP/IP connections\.",
        ),
    }


def paste(page: Any, live_server: Any, text: str) -> None:
    page.goto(live_server.url + "/")
    page.locator("#paste-text").fill(text)
    page.locator("#paste-text").press("Control+Enter")


def test_a_reworded_message_shows_its_diff(
    page: Any, live_server: Any, records: dict[str, ErrorRecord]
) -> None:
    paste(page, live_server, SA_PASTE)
    item = page.locator("#results .suggestions li", has_text="rfc1738").first
    item.wait_for(timeout=10_000)
    diff = item.locator(".reworded")
    assert "reworded: rfc1738 → SQLAlchemy" in diff.inner_text()
    assert diff.locator("del").text_content() == "[record: rfc1738]"
    assert diff.locator("ins").text_content() == "[your paste: SQLAlchemy]"
    # the placeholder's value is shown as a value, not as a change
    assert diff.locator("code.value").inner_text() == "'postgres//kb@db/kb'"
    assert diff.locator("del").count() == 1
    # the strike-through is the browser's own, not a colour alone
    assert "line-through" in diff.locator("del").evaluate("e => getComputedStyle(e).textDecoration")
    screenshot(page, "suggestion-reworded")
    assert_clean(page)


def test_a_chained_exception_lists_its_root_cause_first(
    page: Any, live_server: Any, records: dict[str, ErrorRecord]
) -> None:
    paste(page, live_server, JAVA_LOG)
    table = page.locator("#results table.summary")
    table.wait_for(timeout=10_000)
    rows = table.locator("tbody tr")
    assert rows.count() == 3
    first, second, third = (rows.nth(i) for i in range(3))
    assert "Connection to {0} refused" in first.locator("th").inner_text()
    assert first.locator(".order-reason").inner_text() == "root cause: innermost Caused by"
    assert "Unable to acquire JDBC Connection" in second.locator("th").inner_text()
    why = second.locator(".order-reason")
    assert why.inner_text().startswith("consequence of the error on line 8")
    assert why.locator("a").get_attribute("href") == f"/records/{records['psql'].pk}/"
    assert "Could not open JPA EntityManager" in third.locator("th").inner_text()
    assert f"/records/{records['jdbc'].pk}/" in third.locator(".order-reason").inner_html()
    screenshot(page, "summary-root-cause-first")
    assert_clean(page)
