"""The answer a result gives, as a reader sees it: one count, the paste's values in the
card's title (the template one click away), every value escaped.

The real matcher runs here: the counts must agree on what the matcher really reports
(confident matches, groups of scan hits, suggestions), not on a hand-made result.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from kb.records.models import ErrorRecord
from tests.factories import SEED, import_lines, make_record

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
SEED_LINE = (
    "2026-11-30T03:12:44Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
MULTI_ERROR_LOG = "\n".join(
    [
        SEED_LINE,
        "2026-11-30T03:12:45Z ERROR Invalid column: cache_size",
        "2026-11-30T03:12:46Z WARN Vnode bitmap for actor 3 is empty",
        "2026-11-30T03:12:47Z INFO connection reset by peer",
        "2026-11-30T03:12:48Z ERROR Invalid column: cache_size",
    ]
)


def make_answer_records() -> dict[str, ErrorRecord]:
    """Three specific records and a generic one (a bare word: only ever a suggestion)."""
    assert import_lines(SEED).rejected == 0
    plain = {"sourceCode": ""}
    return {
        "seed": ErrorRecord.objects.get(pk=SEED["record"]["id"]),
        "column": make_record(
            errorMessage="Invalid column: {column_name}",
            messagePattern="Invalid column: (.+?)",
            **plain,
        ),
        "bitmap": make_record(
            errorMessage="Vnode bitmap for actor {} is empty",
            messagePattern="Vnode bitmap for actor (.+?) is empty",
            **plain,
        ),
        "generic": make_record(errorMessage="connection", messagePattern="connection", **plain),
    }


@pytest.fixture
def records() -> dict[str, ErrorRecord]:
    return make_answer_records()


def summary_rows(html: str) -> list[str]:
    table = re.search(r'<table class="summary">.*?</table>', html, re.S)
    assert table is not None
    return re.findall(r'<th scope="row"><a href="/records/([^/]+)/">', table.group(0))


def card_ids(html: str) -> list[str]:
    return re.findall(r'<h2 id="card-\d+" class="card-title"><a href="/records/([^/]+)/">', html)


def test_a_multi_error_paste_with_a_suggestion_has_one_count(
    client: Client, records: dict[str, ErrorRecord]
) -> None:
    html = client.post("/match/", {"text": MULTI_ERROR_LOG}, headers=HX).content.decode()
    cards = card_ids(html)
    assert len(cards) == 3
    count = re.search(r'<strong class="match-count">(.*?)</strong>', html)
    assert count is not None
    assert count.group(1) == "3 known errors found"
    # the summary lists exactly the confident matches: the generic pattern's hit is not a row
    assert sorted(summary_rows(html)) == sorted(cards)
    assert records["generic"].pk not in summary_rows(html)
    # the suggestion is counted apart and listed with the suggestions
    assert '<a href="#suggestions-title" class="suggestion-count">1 other possibility</a>' in html
    suggestions = html[html.index('id="suggestions-title"') :]
    assert f'href="/records/{records["generic"].pk}/"' in suggestions
    assert 'data-announce="3 known errors found, 1 other possibility"' in html


def test_the_whole_page_agrees_too(client: Client, records: dict[str, ErrorRecord]) -> None:
    html = client.post("/match/", {"text": MULTI_ERROR_LOG}).content.decode()
    assert "<title>3 known errors · errorkb</title>" in html
    assert len(card_ids(html)) == len(summary_rows(html)) == 3


def test_the_card_title_shows_the_pasted_values_and_keeps_the_template(
    client: Client, records: dict[str, ErrorRecord]
) -> None:
    html = client.post("/match/", {"text": MULTI_ERROR_LOG}, headers=HX).content.decode()
    assert (
        f'<a href="/records/{records["column"].pk}/">Invalid column: '
        '<span class="value">cache_size</span></a></h2>'
    ) in html
    template = "<summary>Message template</summary>\n  <code>Invalid column: {column_name}</code>"
    assert template in html
    assert '<code class="name">column_name</code> = <code>cache_size</code>' in html
    # a positional placeholder takes the name of the code's argument (the seed: `vnode`)
    assert '<code class="name">vnode</code> = <code>17</code>' in html
    # without a name from the template or the code, the value stands alone
    assert "<li><code>3</code></li>" in html


def test_pasted_values_in_the_title_are_escaped(client: Client) -> None:
    make_record(errorMessage="Invalid column: {name}", messagePattern="Invalid column: (.+?)")
    paste = 'Invalid column: <img src=x onerror=alert(1)>"&'
    html = client.post("/match/", {"text": paste}, headers=HX).content.decode()
    assert '<span class="value">&lt;img src=x onerror=alert(1)&gt;&quot;&amp;</span>' in html
    assert "<img src=x" not in html
