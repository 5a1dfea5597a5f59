"""A record whose every text field is an attack: shared by the page tests
(docs/reliability.md#r6-stored-xss)."""

from __future__ import annotations

import re
from typing import Any

PAYLOAD = (
    '<script>alert("xss")</script><img src=x onerror=alert(1)>'
    '"><svg onload=alert(2)>'
    '<div hx-get="/evil" hx-trigger="load">htmx</div>'
    "{{ request.META }}{% now 'Y' %}"
)
TEXT_FIELDS = (
    "documentation",
    "triggerScenarios",
    "commonSituations",
    "exampleFix",
    "validationCode",
    "typeGuard",
    "tryCatchPattern",
    "sourceCode",
)


def hostile_overrides(**extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = dict.fromkeys(TEXT_FIELDS, PAYLOAD)
    values.update(
        errorMessage="Hostile thing <script>alert(3)</script> failed for {}",
        messagePattern=r"Hostile thing <script>alert\(3\)</script> failed for (.+?)",
        errorClass='Evil"><svg onload=alert(4)>',
        solutions=[PAYLOAD, "second " + PAYLOAD],
        preventionTips=[PAYLOAD],
        tags=["hostile", '<b onmouseover="alert(5)">tag</b>'],
        githubUrl="javascript:alert(document.domain)//https://github.com/x",
        filePath="src/evil.py",
        lineNumber=3,
        sourceCodeStart=1,
        sourceCodeEnd=3,
    )
    values.update(extra)
    return values


def assert_inert(html: str) -> None:
    """No payload element or attribute survived as markup; the text is still there."""
    lowered = html.lower()
    assert "<script>alert" not in lowered
    assert "<img src=x" not in lowered
    assert "<svg" not in lowered
    assert (
        "onerror=alert"
        not in lowered.replace("&quot;", '"').replace("&gt;", ">").replace("&lt;", "<")
        or "<img" not in lowered
    )
    assert 'hx-get="/evil"' not in html
    assert "<div hx-get" not in lowered
    assert "<b onmouseover" not in lowered
    assert not re.search(r'href\s*=\s*["\']?\s*javascript:', lowered)
    assert "&lt;script&gt;" in html  # the payload reads as text
