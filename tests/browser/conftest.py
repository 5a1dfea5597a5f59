"""Browser tests: Playwright driving Debian's chromium against Django's live server.

Every page opened through the ``page`` fixture collects CSP violations and console errors;
a test ends by asserting there were none (``assert_clean(page)``). Screenshots go to
``test-results/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # live_server + sync Playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session", autouse=True)
def _report_browser_versions() -> None:
    """Record what ran (docs/reliability.md#r29-dependencies): chromium and Playwright."""
    from importlib.metadata import version

    try:
        chromium = subprocess.run(
            [CHROMIUM, "--version"], capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except OSError as exc:
        chromium = f"unavailable ({exc})"
    print(f"\n[browser] {chromium}; playwright {version('playwright')}")


@pytest.fixture
def page(page: Any) -> Any:
    """A Playwright page that records CSP violations, console errors and page errors."""
    return watch(page)


def watch(page: Any) -> Any:
    """Record ``page``'s CSP violations, console errors and page errors (for pages opened
    in a browser context of a test's own, as well as the fixture's)."""
    page.console_errors = []
    page.page_errors = []
    page.add_init_script(COLLECT_VIOLATIONS)
    page.on(
        "console",
        lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None,
    )
    page.on("pageerror", lambda exc: page.page_errors.append(str(exc)))
    return page


def csp_violations(page: Any) -> list[str]:
    try:
        return list(page.evaluate("window.__cspViolations || []"))
    except Exception:  # page closed or navigated away mid-evaluation
        return []


def assert_clean(page: Any) -> None:
    """No CSP violation, no console error, no uncaught exception on the page."""
    assert csp_violations(page) == []
    assert [m for m in page.console_errors if "Content Security Policy" in m] == []
    assert page.console_errors == []
    assert page.page_errors == []


def wait_until(page: Any, check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll ``check`` while the page runs, until it holds or ``timeout`` passes: for events
    that leave nothing to wait on in the page (a console message, a refused frame)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(20)


def after_htmx_settles(page: Any) -> None:
    """Arm a promise that resolves on the next ``htmx:afterSettle`` (before the action);
    ``page.evaluate("window.__settled")`` then waits for htmx to have finished its swap."""
    page.evaluate(  # a function returning nothing: evaluate would wait for a returned promise
        "() => { window.__settled = new Promise(r => document.body.addEventListener("
        "'htmx:afterSettle', () => r(true), {once: true})); }"
    )


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
