"""The result as Markdown for a ticket or a pull-request comment (GitHub-flavoured).

Record text and pasted text are untrusted here as everywhere: a record's message or
remediation could carry ``[a link](javascript:…)``, ``<img onerror>``, a heading or an
``@mention`` that would ping people from a PR comment. So prose goes through
``escape_text`` (every Markdown-significant character backslash-escaped, whitespace folded
onto one line, ``@`` and ``#`` references broken with a zero-width space) and pasted lines
go into ``code_span`` (a backtick fence longer than any backtick run inside, so the paste
cannot close it; GitHub renders nothing inside a code span: no HTML, links or mentions).
The only links are the records' own pages, built by the server.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from kb.matching.formats.summary import (
    headline,
    known_errors,
    occurrences,
    plural,
    releases_said,
)

LINE_CHARS = 300  # a pasted line shown in the summary is cut here
SHOWN = 50  # known errors listed; past it, a count of the rest

# Characters CommonMark or GitHub give a meaning to inline (emphasis, links, HTML, code,
# entities, strike-through, tables, math); escaping them all is harmless where they mean
# nothing, so there is no context to get wrong.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&$^])")
_REFERENCE = re.compile(r"([@#])(?=\w)")  # @user, @org/team, #123: mentions and references


def escape_text(text: str) -> str:
    """Prose from a record or a paste, inert as Markdown, on one line."""
    flat = " ".join(str(text).split())
    return _SPECIAL.sub(r"\\\1", _REFERENCE.sub("\\1\u200b", flat))


def code_span(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` as an inline code span that no content can break out of."""
    flat = " ".join(str(text).splitlines()).replace("\t", " ")
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    if not flat.strip():
        return "(blank line)"
    fence = "`" * (max((len(r) for r in re.findall(r"`+", flat)), default=0) + 1)
    if flat[0] in "` " or flat[-1] in "` ":
        flat = f" {flat} "  # CommonMark strips one space each side when both are there
    return f"{fence}{flat}{fence}"


def link(title: str, url: str) -> str:
    if not url:
        return escape_text(title)
    return f"[{escape_text(title)}]({quote(url, safe=':/?#[]@!$&*+,;=%~-._')})"


def render_markdown(data: dict[str, Any], **_options: Any) -> str:
    records = data.get("records", {})
    found = known_errors(data)
    out: list[str] = []
    if found:
        out.append(f"### {headline(found, 'in this log')}")
        out.append("")
    else:
        out.append("### No known error found")
        out.append("")
        repos = data.get("coverage") or []
        if repos:
            listed = ", ".join(
                f"{escape_text(c['repo'])} ({plural(c['records'], 'record')})" for c in repos
            )
            out.append(f"The knowledge base covers {listed}.")
            out.append("")
        if data.get("report_url"):
            out.append(
                f"Should it be known? {link('Report this unknown error', data['report_url'])} "
                "from the paste page."
            )
            out.append("")
    for n, k in enumerate(found[:SHOWN], start=1):
        info = records.get(k.record_id, {})
        m = k.match
        title = info.get("title") or m["slug"]
        out.append(f"{n}. **{link(title, info.get('url', ''))}** · {escape_text(m['repo'])}")
        out.append(f"   - {occurrences(k.count, k.first_line, k.last_line).capitalize()}")
        if k.reason:
            out.append(f"   - Why here: {escape_text(k.reason)}")
        if m.get("evidence"):
            out.append(f"   - Evidence: {escape_text('; '.join(m['evidence']))}")
        out.extend(f"   - {escape_text(said)}" for said in releases_said(m))
        for alt in m.get("also_matches") or []:
            also = f"{alt['repo']} {alt['slug']}, not chosen: {alt['why']}"
            out.append(f"   - Also matches: {escape_text(also)}")
        out.append(f"   - Line {m['line']}: {code_span(info.get('line_text') or m['text'])}")
        if info.get("first_step"):
            out.append(f"   - First thing to try: {escape_text(info['first_step'])}")
    if len(found) > SHOWN:
        out.append(f"\nAnd {len(found) - SHOWN} more known errors.")
    suggestions = data.get("suggestions", [])
    if suggestions:
        out.append("")
        out.append("Possibly also:" if found else "Close, but not certain:")
        out.append("")
        for s in suggestions[:SHOWN]:
            info = records.get(s["record_id"], {})
            title = info.get("title") or s.get("slug") or s["record_id"]
            similar = f"{round(s['similarity'] * 100)}% similar"
            out.append(
                f"- {link(title, info.get('url', ''))}: {similar}, {escape_text(s['reason'])}"
            )
    return "\n".join(out) + "\n"
