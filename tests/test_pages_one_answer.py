"""One error, one answer on the page, the API and the command alike: the real matcher over
real pastes (``tests/engine/samples.py``) with the records that compete for them stored
through the importer.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import django.urls
import pytest
from django.test import Client

from kb.records import links
from tests.engine import samples as S
from tests.factories import import_lines, make_line

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


@pytest.fixture
def records() -> None:
    lines = [
        make_line(
            id=rid, slug=f"sample-{rid}", repo=repo, filePath=path, lineNumber=line,
            errorClass=cls or None, errorMessage=message, messagePattern=pattern,
            sourceCode="",
        )
        for rid, repo, path, line, cls, message, pattern in S.RECORDS
    ]  # fmt: skip
    assert import_lines(*lines).rejected == 0


def page(client: Client, text: str) -> str:
    return client.post("/match/", {"text": text}, headers=HX).content.decode()


def cards(html: str) -> list[str]:
    return re.findall(r'<article class="card match-card".*?</article>', html, re.S)


def test_the_secret_key_traceback_is_one_card(client: Client, records: None) -> None:
    html = page(client, S.PY_SECRET_KEY)
    (card,) = cards(html)
    assert "1 known error found" in html
    assert 'href="/records/9a327bbdc99bb228/"' in card
    assert "line 17" in card  # the exception line, not the quoted `raise` line
    assert "Also matches the same text" in card
    assert 'href="/records/3c77940b7f2c7ac8/"' in card
    assert "own raising line" in card  # "Why this match" names the evidence
    assert "/records/cd34bb07e5e3dfaf/" not in "".join(cards(html))


def test_the_api_says_one_error_counted_once(client: Client, records: None) -> None:
    data = client.post("/api/match", {"text": S.PY_SECRET_KEY}, "application/json").json()
    assert [(a["record_id"], a["count"]) for a in data["answers"]] == [("9a327bbdc99bb228", 1)]
    best = data["matches"][0]
    assert best["record_id"] == "9a327bbdc99bb228"
    assert best["count"] == 1
    assert [x["record_id"] for x in best["also_matches"]] == ["3c77940b7f2c7ac8"]
    assert any("raising line" in e for e in best["evidence"])
    # the other reading stays listed among the confident matches, marked as such
    alt = {m["record_id"]: m for m in data["matches"]}["3c77940b7f2c7ac8"]
    assert alt["alternative_of"] == "9a327bbdc99bb228"
    assert "cd34bb07e5e3dfaf" not in {m["record_id"] for m in data["matches"]}


def test_a_placeholder_in_the_quoted_raise_line_is_never_a_value(
    client: Client, records: None
) -> None:
    (card,) = cards(page(client, S.PY_INVALID_FILTER))
    values = re.search(r'<div class="captures">.*?</div>', card, re.S)
    assert values is not None
    assert "upper_first" in values.group(0)
    assert "%s" not in values.group(0)
    title = re.search(r'<h2 id="card-1" class="card-title">.*?</h2>', card, re.S)
    assert title is not None
    assert "upper_first" in title.group(0)


def test_another_wording_shows_the_pastes_words_and_the_difference(
    client: Client, records: None
) -> None:
    (card,) = cards(page(client, S.JAVA_KAFKA_BROKER))
    title = re.search(r'<h2 id="card-1" class="card-title">.*?</h2>', card, re.S)
    assert title is not None
    # the paste's own words for the span it matched, never the record's newer wording
    assert "Connection to node -1 (localhost/127.0.0.1:9092) could not be established." in (
        title.group(0)
    )
    assert "Node may not be available" not in title.group(0)
    assert "partial match" in title.group(0)
    diff = re.search(r'<span class="word-diff">.*?</span></p>', card, re.S)
    assert diff is not None
    assert re.search(r"<del>.*?Node.*?</del>", diff.group(0))
    assert re.search(r"<ins>.*?Broker.*?</ins>", diff.group(0))


def test_the_summary_rows_are_the_cards_in_the_same_order(client: Client, records: None) -> None:
    html = page(client, S.JAVA_KAFKA_BROKER + S.JAVA_KAFKA + S.GO_ETCD_JSON)
    table = re.search(r'<table class="summary">.*?</table>', html, re.S)
    assert table is not None
    rows = re.findall(r'<th scope="row"><a href="/records/([^/]+)/"', table.group(0))
    carded = [re.findall(r'href="/records/([^/]+)/"', c)[0] for c in cards(html)]
    assert rows == carded == ["06afaf5115e90cca", "3358a242ac30556c", "3d48507c0fdbb943"]
    counts = re.findall(r"<td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>", table.group(0))
    assert [c[0] for c in counts] == ["1", "1", "3"]


def test_a_paste_cut_at_the_raise_line_shows_no_placeholder_as_a_value(
    client: Client, records: None
) -> None:
    cut = S.PY_INVALID_FILTER.rsplit("django.template", 1)[0]
    (card,) = cards(page(client, cut))
    assert 'href="/records/548dd4f336d6880e/"' in card
    assert '<div class="captures">' not in card  # its only value would be `%s`
    assert "raising line a traceback quotes" in card


def test_each_record_is_reversed_once_per_page(
    client: Client, records: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record is linked from its card, its summary row and the Markdown copy: the page
    reverses its URL once (`kb.records.links.RecordUrls`), not once per link."""
    reversed_ids: list[str] = []
    real = links.reverse

    def counted(viewname: str, *args: Any, **kwargs: Any) -> str:  # the real reverse, counted
        if viewname == "record_detail":
            reversed_ids.append(str(kwargs["args"][0]))
        return real(viewname, *args, **kwargs)

    monkeypatch.setattr(links, "reverse", counted)
    monkeypatch.setattr(django.urls, "reverse", counted)  # what {% url %} calls
    html = page(client, S.JAVA_KAFKA_BROKER + S.JAVA_KAFKA + S.GO_ETCD_JSON)
    linked = re.findall(r'href="/records/([^/]+)/"', html)
    assert len(linked) > len(set(linked)) >= 3  # each card's record linked more than once
    assert set(reversed_ids) >= set(linked)
    assert Counter(reversed_ids).most_common(1)[0][1] == 1
