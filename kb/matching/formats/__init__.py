"""One match result, four ways to print it: for a person, a program, a CI log, a ticket.

``manage.py match --format``, ``POST /api/match?format=`` and the paste page's "Copy as
Markdown" all print a result through ``render``, so a CI job calling a shared server with
``contrib/kb_match.py`` reads exactly what the command prints locally, and the client needs no
renderer of its own.

The renderers read the contract's JSON shape (``MatchResult.as_json()``), extended by
``kb.matching.formats.data.report_data`` with what a reader needs beyond it (each record's
title, link and first remediation step; the pasted line of each match). They are pure
functions of that dictionary: fields added to the shape later (a group's ``reason``) show
up when present and are skipped when absent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kb.matching.formats.data import DISPLAY_KEYS
from kb.matching.formats.github import render_github
from kb.matching.formats.markdown import render_markdown
from kb.matching.formats.summary import known_errors, plural, releases_said

FORMATS = ("text", "json", "github", "markdown")


def covered(data: dict[str, Any]) -> str:
    """What the knowledge base covers, for "no known error": repositories with their record
    counts (``report_data``'s ``coverage``), empty when the result carries none."""
    repos = data.get("coverage") or []
    if not repos:
        return ""
    listed = ", ".join(f"{c['repo']} ({plural(c['records'], 'record')})" for c in repos)
    return f"The knowledge base covers {listed}."


def report_offer(data: dict[str, Any]) -> str:
    """Where an error that should be known is reported (reports on), else nothing."""
    url = data.get("report_url")
    if not url:
        return ""
    return (
        f"Should it be known? Paste the error at {url} and choose "
        "'Report this unknown error' (or POST it to /api/reports)."
    )


def render_text(data: dict[str, Any], **_options: Any) -> str:
    """The command's default, for a person at a terminal."""
    lines: list[str] = []
    if not data["matches"]:
        lines.append("No known error found.")
        lines.extend(filter(None, (covered(data), report_offer(data))))
    for k in known_errors(data):
        m = k.match
        lines.append(f"line {m['line']}: {m['slug']} ({m['record_id']}, {m['repo']})")
        lines.append(f"  {m['text']}")
        lines.append(f"  {m.get('reason', '')}")
        for e in m.get("evidence") or []:
            lines.append(f"  evidence: {e}")
        lines.extend(f"  {said}" for said in releases_said(m))
        for alt in m.get("also_matches") or []:
            lines.append(f"  also matches {alt['record_id']} ({alt['repo']}): {alt['why']}")
    for s in data["suggestions"]:
        lines.append(f"maybe {s['record_id']} ({s['similarity']:.2f}): {s['reason']}")
    lines.append(f"{data.get('elapsed_ms', 0):.1f} ms")
    return "\n".join(lines) + "\n"


def render_json(data: dict[str, Any], **_options: Any) -> str:
    """The contract's object, without the display extras ``report_data`` added."""
    shape = {k: v for k, v in data.items() if k not in DISPLAY_KEYS}
    return json.dumps(shape, ensure_ascii=False) + "\n"


RENDERERS: dict[str, Callable[..., str]] = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "markdown": render_markdown,
}


def render(fmt: str, data: dict[str, Any], *, file: str | None = None) -> str:
    """``data`` printed as ``fmt`` (one of ``FORMATS``); ``file`` names the log for the
    annotations of the ``github`` format."""
    return RENDERERS[fmt](data, file=file)


def known_count(data: dict[str, Any]) -> int:
    """Distinct known errors in a result: what the exit codes and the API's
    ``KB-Known-Errors`` header branch on (0: nothing known)."""
    return len(known_errors(data))


__all__ = ["FORMATS", "known_count", "render"]
