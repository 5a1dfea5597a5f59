"""In a real browser: htmx's hardened configuration, CSRF on htmx posts, clickjacking,
nothing of a paste kept client-side, and a friendly 500 (docs/reliability.md#r5-htmx-config,
#r8-csrf, #r9-clickjacking, #r27-paste-privacy, #r28-friendly-failure).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.conftest import after_htmx_settles, assert_clean, screenshot, wait_until
from tests.factories import SEED, import_lines

SECRET = "AKIAZZQQ7EXAMPLE4242"
PASTE = f"2026-11-30T03:12:44Z ERROR credentials rejected for key {SECRET}"


@pytest.fixture
def app(transactional_db: None, live_server: Any, settings: Any) -> Any:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    assert import_lines(SEED).rejected == 0
    return live_server


def _htmx_config(page: Any) -> dict[str, Any]:
    return page.evaluate(
        "(() => { const c = htmx.config; return {allowEval: c.allowEval, "
        "allowScriptTags: c.allowScriptTags, selfRequestsOnly: c.selfRequestsOnly, "
        "includeIndicatorStyles: c.includeIndicatorStyles, "
        "historyCacheSize: c.historyCacheSize}; })()"
    )


@pytest.mark.parametrize("path", ["/", "/records/c36bebe8cdedec02/"])
def test_htmx_runs_with_the_hardened_config(page: Any, app: Any, path: str) -> None:
    page.goto(app.url + path)
    assert _htmx_config(page) == {
        "allowEval": False,
        "allowScriptTags": False,
        "selfRequestsOnly": True,
        "includeIndicatorStyles": False,
        "historyCacheSize": 0,
    }
    assert_clean(page)


def test_nothing_of_a_paste_is_kept_in_browser_storage(page: Any, app: Any) -> None:
    page.goto(app.url + "/")
    after_htmx_settles(page)
    with page.expect_response(lambda r: r.url.endswith("/match/")) as info:
        page.locator("#paste-text").fill(PASTE)
    assert info.value.status == 200
    assert "no-store" in (info.value.headers.get("cache-control") or "")
    assert page.evaluate("window.__settled") is True  # the results are in the page
    storage = page.evaluate(
        "JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])"
    )
    assert page.evaluate("sessionStorage.getItem('htmx-history-cache')") is None
    assert SECRET not in storage
    assert SECRET not in page.url
    # the paste was sent in the body of a POST, never in a URL
    assert info.value.request.method == "POST"
    assert SECRET not in info.value.request.url
    assert_clean(page)


def _post_from_page(page: Any, token: str | None) -> int:
    headers = {"HX-Request": "true"}
    if token is not None:
        headers["X-CSRFToken"] = token
    return page.evaluate(
        """async ([headers]) => {
             const body = new FormData(); body.append("text", "Error: boom");
             const r = await fetch("/match/", {method: "POST", body, headers,
                                               credentials: "same-origin"});
             return r.status; }""",
        [headers],
    )


def test_csrf_valid_token_passes_bogus_or_missing_is_403(page: Any, app: Any) -> None:
    page.goto(app.url + "/")
    token = json.loads(page.locator("body").get_attribute("hx-headers"))["X-CSRFToken"]
    assert _post_from_page(page, token) == 200
    assert _post_from_page(page, "bogus" * 8) == 403
    assert _post_from_page(page, None) == 403


def test_htmx_post_with_a_tampered_token_is_refused(page: Any, app: Any) -> None:
    page.goto(app.url + "/")
    page.evaluate(
        """() => {
             document.body.setAttribute("hx-headers", '{"X-CSRFToken": "tampered"}');
             document.querySelectorAll("input[name=csrfmiddlewaretoken]")
               .forEach(i => i.value = "tampered");
           }"""
    )
    with page.expect_response(lambda r: r.url.endswith("/match/")) as info:
        page.locator("#paste-text").fill("Error: boom")
    assert info.value.status == 403
    page.console_errors.clear()  # the browser logs the 403 itself


@pytest.fixture
def attacker_site(app: Any) -> Any:
    """A page on another loopback origin that frames the app (a real server: Chromium's
    private-network rules would stop a public or fake origin before the app's headers)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = (
        f'<html><body><h1>evil</h1><iframe id="f" src="{app.url}/"></iframe></body></html>'
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_framing_the_app_is_refused(page: Any, attacker_site: str) -> None:
    page.goto(attacker_site)
    wait_until(
        page,
        lambda: any("frame-ancestors" in m for m in page.console_errors),
        "the frame-ancestors refusal",
    )
    frame = page.frame_locator("#f")
    assert frame.locator("#paste-text").count() == 0
    assert "evil" in page.locator("h1").inner_text()
    app_frames = [f for f in page.frames if f != page.main_frame]
    for f in app_frames:
        assert "paste-text" not in f.content()


def test_server_error_in_an_htmx_request_shows_a_generic_message(
    page: Any, app: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.DEBUG = False

    def explode(text: str, **kwargs: Any) -> Any:
        raise RuntimeError("SECRET_SETTING_VALUE leaked?")

    monkeypatch.setattr("kb.matching.views.match_text", explode)
    page.goto(app.url + "/")
    with page.expect_response(lambda r: r.url.endswith("/match/")) as info:
        page.locator("#paste-text").fill("Error: boom")
    assert info.value.status == 500
    results = page.locator("#results")
    results.locator("[role=alert]").wait_for(timeout=5000)
    shown = results.inner_text()
    assert shown.strip()
    assert "SECRET_SETTING_VALUE" not in page.content()
    assert "Traceback" not in page.content()
    assert "RuntimeError" not in page.content()
    screenshot(page, "hardening-500")
