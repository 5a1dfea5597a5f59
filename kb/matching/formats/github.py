"""GitHub Actions workflow commands: one ``::error`` annotation per known error in the log.

The runner reads every stdout line that starts with ``::`` as a command, so every piece of
record text and pasted text goes through ``escape_data`` (the message) or
``escape_property`` (``file=``, ``title=``): an escaped newline cannot start a second
command, and an escaped ``,`` or ``:`` cannot end a property or the property list early.
These are the escapes of GitHub's own toolkit (``@actions/core``'s ``command.ts``). Every
line printed is a command, the closing summary a ``::notice``, so nothing pasted ever
reaches the log unescaped.

Each known error is annotated once, at its first line, with its count and last line in
the message: a log repeating one error a thousand times gets one annotation, not a
thousand. GitHub shows only ten annotations of each kind per step and drops the rest
unseen, so at most ``MAX_ANNOTATIONS`` errors are annotated, in the summary's order (root
cause first), and as many warnings; the closing ``::notice`` names every known error that
got no annotation of its own, so none is lost from the log.
"""

from __future__ import annotations

from typing import Any

from kb.matching.formats.summary import (
    KnownError,
    headline,
    known_errors,
    occurrences,
    plural,
    releases_said,
)

TITLE_CHARS = 120  # GitHub cuts long annotation titles; keep the start readable
MAX_ANNOTATIONS = 10  # per kind (error, warning): what GitHub shows of one step
NAMED_REST = 50  # known errors past the annotated ones named in the summary; then a count


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str | int | None) -> str:
    """``::name key=value,...::message``, every part escaped; ``None`` properties left out."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None and value != ""
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def render_github(data: dict[str, Any], *, file: str | None = None, **_options: Any) -> str:
    records = data.get("records", {})
    lines: list[str] = []
    found = known_errors(data)
    for k in found[:MAX_ANNOTATIONS]:
        info = records.get(k.record_id, {})
        m = k.match
        where = occurrences(k.count, k.first_line, k.last_line)
        body = [m["text"], f"Known error {m['slug']} ({m['repo']}), {where}."]
        if k.reason:
            body.append(f"Why here: {k.reason}")
        body.extend(releases_said(m))
        for alt in m.get("also_matches") or []:
            body.append(f"Also matches {alt['slug']} ({alt['repo']}), not chosen: {alt['why']}")
        if info.get("first_step"):
            body.append(f"First thing to try: {info['first_step']}")
        if info.get("url"):
            body.append(f"Record: {info['url']}")
        lines.append(
            command(
                "error",
                "\n".join(body),
                file=file,
                line=k.first_line if file else None,
                title=_title(info.get("title") or m["slug"]),
            )
        )
    for s in data.get("suggestions", [])[:MAX_ANNOTATIONS]:
        info = records.get(s["record_id"], {})
        body = [
            f"{info.get('title') or s.get('slug') or s['record_id']}",
            f"{round(s['similarity'] * 100)}% similar: {s['reason']}",
        ]
        if info.get("url"):
            body.append(f"Record: {info['url']}")
        lines.append(command("warning", "\n".join(body), file=file, title="Possibly a known error"))
    lines.append(command("notice", _summary(found, data), title="Known errors"))
    return "\n".join(lines) + "\n"


def _summary(found: list[KnownError], data: dict[str, Any]) -> str:
    suggested = len(data.get("suggestions", []))
    maybe = f"; {suggested} possible (warnings)" if suggested else ""
    if suggested > MAX_ANNOTATIONS:
        maybe = f"; {suggested} possible ({MAX_ANNOTATIONS} shown as warnings)"
    if not found:
        return f"No known error found{maybe}."
    said = f"{headline(found, 'found')}{maybe}."
    rest = found[MAX_ANNOTATIONS:]
    if not rest:
        return said
    named = [
        f"{k.match['slug']} ({occurrences(k.count, k.first_line, k.last_line)})"
        for k in rest[:NAMED_REST]
    ]
    more = f"; and {len(rest) - NAMED_REST} more" if len(rest) > NAMED_REST else ""
    return (
        f"{said}\nAnnotated: the first {MAX_ANNOTATIONS}. Not annotated, "
        f"{plural(len(rest), 'more known error')}: {'; '.join(named)}{more}."
    )
