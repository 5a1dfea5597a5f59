"""axe-core on the pages a reader uses, in light and dark: no serious or critical violation.

axe-core comes from npm (``tests/browser/package.json``, installed by ``make axe``) and is
injected by the test only; the app never serves it. Injecting a script the page did not
list is exactly what the app's CSP forbids, so these tests alone open their browser
context with ``bypass_csp=True``; every other browser test runs under the real policy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_answers import MULTI_ERROR_LOG, paste
from tests.test_pages_answers import make_answer_records

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")

pytestmark = pytest.mark.skipif(
    not AXE.exists(), reason="axe-core is not installed: run `make axe` (npm ci)"
)


def violations(page: Any) -> list[str]:
    """axe's serious and critical violations on the page as it is now, one line each."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))"
    )
    return [
        f"{v['impact']}: {v['id']} ({v['help']}) at {v['nodes']}"
        for v in found
        if v["impact"] in BLOCKING
    ]


def paste_with_results(page: Any, base: str) -> None:
    page.goto(base + "/")
    paste(page, MULTI_ERROR_LOG)
    page.locator("#results details.template summary").first.click()  # open parts count too


def paste_without_match(page: Any, base: str) -> None:
    page.goto(base + "/")
    paste(page, "\n".join(f"line {n}: nothing anybody has seen before" for n in range(60)))


PAGES: dict[str, Callable[[Any, str], None]] = {
    "paste page with results": paste_with_results,
    "paste page, no known error": paste_without_match,
    "record page": lambda page, base: page.goto(base + "/records/c36bebe8cdedec02/"),
    "tag list": lambda page, base: page.goto(base + "/tags/"),
    "tag page": lambda page, base: page.goto(base + "/tags/vnode/"),
    "search page": lambda page, base: page.goto(base + "/records/?q=column"),
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", list(PAGES))
def test_no_serious_or_critical_axe_violation(
    browser: Any, live_server: Any, transactional_db: None, name: str, scheme: str
) -> None:
    make_answer_records()
    context = browser.new_context(bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        PAGES[name](page, live_server.url)
        page.wait_for_load_state("networkidle")
        assert page.evaluate(f"matchMedia('(prefers-color-scheme: {scheme})').matches")
        assert violations(page) == []
    finally:
        context.close()
