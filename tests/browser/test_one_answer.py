"""One list, one order, in a real browser: the summary's rows and the cards below them
name the same errors in the same order (root cause first), and a traceback read once is
one card."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import assert_clean
from tests.browser.test_answers import paste, result_of
from tests.engine import samples as S
from tests.factories import import_lines, make_line


@pytest.fixture
def records(transactional_db: None) -> None:
    lines = [
        make_line(
            id=rid, slug=f"sample-{rid}", repo=repo, filePath=path, lineNumber=line,
            errorClass=cls or None, errorMessage=message, messagePattern=pattern,
            sourceCode="",
        )
        for rid, repo, path, line, cls, message, pattern in S.RECORDS
    ]  # fmt: skip
    assert import_lines(*lines).rejected == 0


def test_the_summary_order_is_the_card_order(page: Any, live_server: Any, records: None) -> None:
    page.goto(live_server.url + "/")
    paste(page, S.JAVA_KAFKA_BROKER + S.PY_SECRET_KEY + S.JAVA_KAFKA + S.GO_ETCD_JSON)
    seen = result_of(page)
    assert seen["count"] == "4 known errors found"
    assert seen["rows"] == seen["card_links"]
    assert seen["rows"] == [
        "/records/06afaf5115e90cca/",
        "/records/9a327bbdc99bb228/",
        "/records/3358a242ac30556c/",
        "/records/3d48507c0fdbb943/",
    ]
    orders = page.locator("#results tr.summary-row").evaluate_all(
        "els => els.map(e => e.dataset.order)"
    )
    assert orders == ["1", "2", "3", "4"]
    assert_clean(page)
