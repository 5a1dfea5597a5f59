"""In a real browser: a page of another origin cannot write through a visitor's browser
(docs/reliability.md#r33-same-origin-writes).

The site runs on Django's live server; the attacker's page is served by a second server on
loopback, under another origin: ``localhost`` (another site, ``Sec-Fetch-Site:
cross-site``) or ``127.0.0.1`` on another port (the same site, another origin). From there
the page tries what a browser sends without asking: ``fetch()`` with a ``text/plain`` body
holding the JSON, a form posted as ``text/plain`` (the JSON smuggled in a field name and
value), a form posted to the site's own HTML form; and an ``application/json`` fetch, which
the browser only sends after a preflight the site does not grant. Nothing may be stored;
the site's own pages, in the same browser, still write through the same API.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from kb.loop.models import Gap, Proposal, Vote
from tests.browser.conftest import assert_clean, watch
from tests.factories import SEED, import_lines

RECORD = "c36bebe8cdedec02"
REPORT = {"text": "ERROR Widget frobnication failed for order 9 on the cross-site page"}
PROPOSAL = {"record_id": RECORD, "field": "solutions", "text": "Cross-site proposal"}
VOTE = {"record_id": RECORD, "verdict": "wrong_match"}
WRITES = {"/api/reports": REPORT, "/api/proposals": PROPOSAL, "/api/feedback": VOTE}

# fetch() as another site's script would call it: ``no-cors`` with text/plain needs no
# preflight and its request reaches the server (the answer is opaque to the page); the
# JSON call needs a preflight, which fails, so the browser never sends the POST.
FETCHES = """
async ([target, writes]) => {
  const seen = [];
  for (const [path, body] of Object.entries(writes)) {
    const plain = await fetch(target + path, {
      method: "POST", mode: "no-cors", credentials: "include",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify(body),
    });
    seen.push(plain.type);
    try {
      await fetch(target + path, {
        method: "POST", credentials: "include",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
      });
      seen.push("json sent");
    } catch (e) {
      seen.push("json blocked");
    }
  }
  return seen;
}
"""


# The site's own page writing through the API, as its scripts would.
OWN_WRITES = """
async (writes) => {
  const out = [];
  for (const [path, body] of Object.entries(writes)) {
    const r = await fetch(path, {method: "POST", body: JSON.stringify(body),
                                 headers: {"Content-Type": "application/json"}});
    out.push(r.status);
  }
  return out;
}
"""


def smuggling_form(action: str, body: dict[str, Any]) -> str:
    """A form whose text/plain encoding (``name=value``) is ``body`` as JSON: the name
    holds all of it but the end of a dummy key, the value closes it."""
    text = json.dumps({**body, "pad": ""})
    name, value = text[: text.rindex('""') + 1], '"}'  # sent as name=value: "pad": "="
    return (
        f'<form id="attack" method="post" enctype="text/plain" action="{action}">'
        f"<input type=hidden name='{name}' value='{value}'></form>"
    )


class AttackerSite:
    """A second server on loopback answering every path with the page set last."""

    def __init__(self) -> None:
        self.page = "<!doctype html><title>elsewhere</title>"
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = site.page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    yield site
    site.close()


@pytest.fixture
def app(transactional_db: None, live_server: Any, settings: Any) -> Any:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    assert import_lines(SEED).rejected == 0
    return live_server


def other_origin(app: Any, attacker: AttackerSite, host: str) -> str:
    """The attacker's origin on ``host``, never the site's own."""
    origin = f"http://{host}:{attacker.port}"
    assert urlsplit(origin).netloc != urlsplit(app.url).netloc
    return origin


def stored() -> dict[str, int]:
    return {
        "gaps": Gap.objects.count(),
        "proposals": Proposal.objects.count(),
        "votes": Vote.objects.count(),
    }


NOTHING = {"gaps": 0, "proposals": 0, "votes": 0}


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_another_origins_fetch_stores_nothing_the_sites_own_pages_still_write(
    browser: Any, app: Any, attacker: AttackerSite, host: str
) -> None:
    visitor = browser.new_context()
    page = visitor.new_page()
    page.goto(app.url + f"/records/{RECORD}/")  # the visitor has the site's cookies
    page.goto(other_origin(app, attacker, host) + "/")
    seen = page.evaluate(FETCHES, [app.url, WRITES])
    # Each text/plain request reached the site (an opaque answer, not a network error);
    # each JSON one was stopped by the browser's preflight.
    assert seen == ["opaque", "json blocked"] * len(WRITES)
    assert stored() == NOTHING
    # The same visitor's browser, on the site's own page: the same writes are served
    # (the browser sends Origin and Sec-Fetch-Site: same-origin; both pass).
    own = watch(visitor.new_page())
    own.goto(app.url + f"/records/{RECORD}/")
    statuses = own.evaluate(OWN_WRITES, WRITES)
    assert statuses == [201, 201, 201]
    assert stored() == {"gaps": 1, "proposals": 1, "votes": 1}
    assert_clean(own)
    visitor.close()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
@pytest.mark.parametrize("path", sorted(WRITES))
def test_another_origins_text_plain_form_stores_nothing(
    browser: Any, app: Any, attacker: AttackerSite, host: str, path: str
) -> None:
    page = browser.new_context().new_page()
    attacker.page = smuggling_form(app.url + path, WRITES[path])
    page.goto(other_origin(app, attacker, host) + "/")
    with page.expect_response(lambda r: r.url == app.url + path) as answer:
        page.evaluate("document.getElementById('attack').submit()")
    assert answer.value.status == 403
    assert answer.value.json()["error"] == "Cross-site request refused"
    assert stored() == NOTHING
    # The site's own HTML form, posted from there: refused by Django's CSRF check.
    action = f"{app.url}/records/{RECORD}/propose/"
    attacker.page = (
        f'<form id="attack" method="post" action="{action}">'
        '<input name="field" value="solutions"><input name="text" value="Cross-site">'
        "</form>"
    )
    page.goto(other_origin(app, attacker, host) + "/")
    with page.expect_response(lambda r: r.url == action) as answer:
        page.evaluate("document.getElementById('attack').submit()")
    assert answer.value.status == 403
    assert stored() == NOTHING
    page.context.close()
