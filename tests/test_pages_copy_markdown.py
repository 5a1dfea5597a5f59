"""The paste page carries the result as Markdown for its "Copy as Markdown" button: the
same text the API renders, escaped into a hidden element (docs/reliability.md#r6-stored-xss),
and only when something is known."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from tests.factories import import_lines, make_line
from tests.hostile import assert_inert, hostile_overrides

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
PASTE = "boot <b>ok</b>\nError: Hostile thing <script>alert(3)</script> failed for `x` @admin\n"
SOURCE = re.compile(r'<pre id="results-markdown" class="copy-source" hidden>(.*?)</pre>', re.S)


def test_the_page_holds_the_apis_markdown_escaped_behind_a_hidden_button(client: Client) -> None:
    line = make_line(**hostile_overrides())
    assert import_lines(line).rejected == 0
    page = client.post("/match/", {"text": PASTE}, headers=HX).content.decode()
    assert_inert(page)
    found = SOURCE.search(page)
    assert found, page
    api = client.post("/api/match?format=markdown", PASTE, content_type="text/plain")
    assert html.unescape(found.group(1)) == api.content.decode()
    assert f"/records/{line['record']['id']}/)" in api.content.decode()
    button = re.search(r'<button[^>]*data-copy-target="results-markdown"[^>]*>', page)
    assert button
    assert " hidden" in button.group(0)  # app.js shows it where the clipboard works


def test_no_markdown_when_nothing_is_known(client: Client) -> None:
    page = client.post("/match/", {"text": "all fine here"}, headers=HX).content.decode()
    assert "results-markdown" not in page
