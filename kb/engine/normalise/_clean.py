"""Character-level cleaning passes: terminal escapes, line ends, controls, markup.

Each pass takes a string and returns ``(new_text, Layer | None, step message | None)``; a pass
that finds nothing to do returns its input and no layer, after a C-speed presence check
(`in`, `str.isascii`, one compiled `search`), so a plain log pays almost nothing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

from ._mapping import Builder, Layer, deletion_layer

# After ESC: CSI ("[" ... final byte), OSC ("]" ... BEL or ESC \\), or a two-byte sequence.
# Starting the pattern with the literal ESC lets `re` skip to candidates at memchr speed.
_ANSI_TAIL = r"(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)"
_ANSI = r"\x1b" + _ANSI_TAIL
# Other controls (not \t, \n, \r, ESC), with C1 CSI (\x9b ...) as a unit.
_CTRL = r"\x9b[0-?]*[ -/]*[@-~]?|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9a\x9c-\x9f]"
_CRLF = r"\r(?=\n)"
_CTRL_CHARS = [chr(c) for c in range(32) if c not in (9, 10, 13, 27)] + ["\x7f"]
_C1_CHARS = [chr(c) for c in range(0x80, 0xA0)]
_PATTERNS: dict[tuple[bool, bool, bool], re.Pattern[str]] = {}

# Spaces that are only typographic: fold to " " in place (1:1, so no mapping needed).
_SPACE_CHARS = (
    "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)
_SPACE_TABLE = str.maketrans(dict.fromkeys(_SPACE_CHARS, " "))
_ZERO_WIDTH_CHARS = "\u200b\u200c\u200d\u2060\ufeff"
# A run is one deletion: a paste of thousands of them costs one entry in the offset map.
_ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH_CHARS}]+")


def _delete_pattern(esc: bool, ctrl: bool, cr: bool) -> re.Pattern[str]:
    key = (esc, ctrl, cr)
    rx = _PATTERNS.get(key)
    if rx is None:
        parts = [p for p, on in ((_ANSI, esc), (_CTRL, ctrl), (_CRLF, cr)) if on]
        rx = _PATTERNS[key] = re.compile("|".join(parts))
    return rx


def clean_controls(src: str) -> tuple[str, Layer | None, list[str]]:
    """Remove ANSI/OSC escapes and control characters; CRLF -> LF; lone CR -> LF.

    Presence is checked with single-character `in` (memchr speed) before any regex runs.
    """
    esc = "\x1b" in src
    cr = "\r" in src
    ctrl = any(c in src for c in _CTRL_CHARS) or (
        not src.isascii() and any(c in src for c in _C1_CHARS)
    )
    if not (esc or cr or ctrl):
        return src, None, []
    n_crlf = src.count("\r\n") if cr else 0
    layer = None
    out = src
    n_ansi = n_ctrl = 0
    if esc and not ctrl and not n_crlf and "\x1b\\" not in src:
        # the common case (coloured logs): one regex pass, positions from str.split
        out, layer, n_ansi = deletion_layer(src, _delete_pattern(True, False, False), "\x1b")
    elif esc or ctrl or n_crlf:
        out, layer, n_dropped = deletion_layer(src, _delete_pattern(esc, ctrl, n_crlf > 0))
        n_ansi = (src.count("\x1b") - src.count("\x1b\\")) if esc else 0
        n_ctrl = n_dropped - n_ansi - n_crlf
    n_cr = out.count("\r") if cr else 0
    if n_cr:
        out = out.replace("\r", "\n")  # 1:1, mapping unchanged
    steps: list[str] = []
    if n_ansi:
        steps.append(f"stripped {n_ansi} ANSI escape code{'s' * (n_ansi != 1)}")
    if n_crlf:
        steps.append(f"converted {n_crlf} CRLF line end{'s' * (n_crlf != 1)} to LF")
    if n_cr:
        steps.append(f"converted {n_cr} lone CR{'s' * (n_cr != 1)} to line breaks")
    if n_ctrl > 0:
        steps.append(f"removed {n_ctrl} control character{'s' * (n_ctrl != 1)}")
    return out, layer, steps


def fold_spaces(src: str) -> tuple[str, list[str]]:
    """Non-breaking and other typographic spaces -> ASCII space (1:1, same offsets)."""
    if src.isascii():
        return src, []
    n = sum(src.count(c) for c in _SPACE_CHARS if c in src)
    if not n:
        return src, []
    return src.translate(_SPACE_TABLE), [
        f"replaced {n} non-breaking/typographic space{'s' * (n != 1)}"
    ]


def drop_zero_width(src: str) -> tuple[str, Layer | None, list[str]]:
    if src.isascii() or not _ZERO_WIDTH_RE.search(src):
        return src, None, []
    out, layer, _runs = deletion_layer(src, _ZERO_WIDTH_RE)
    n = len(src) - len(out)
    return out, layer, [f"removed {n} zero-width character{'s' * (n != 1)}"]


# --- Markdown / HTML around a paste -------------------------------------------------------

# A fence line: ``` or ~~~ with an optional short info string ("python", "Python traceback").
_FENCE_LINE_RE = re.compile(
    r"^[ \t]*(?:```+|~~~+)[ \t]*[\w+#.-]*(?:[ \t]+[\w+#.-]+){0,3}[ \t]*$", re.M
)
# A fence glued to text: "```Error: ..." at line start, "... settings.```" at line end.
_FENCE_GLUED_RE = re.compile(r"^[ \t]*```+(?=\S)|(?<=\S)```+[ \t]*$", re.M)
# Markdown quote markers "> " (possibly nested) at the start of a line.
_QUOTE_RE = re.compile(r"^(?:>[ \t]?)+(?=[^\n]*\S)|^>+[ \t]*$", re.M)
# HTML wrappers that carry no text.
_TAG_RE = re.compile(r"</?(?:pre|code|samp|kbd|tt)\b[^>\n]{0,200}>|<br\s*/?>", re.I)
_ENTITY_RE = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


_MARKUP_STEPS = {
    "fence": "removed {n} Markdown code fence marker(s)",
    "quote": "removed {n} Markdown quote marker(s)",
    "tag": "removed {n} HTML tag(s)",
    "entity": "decoded {n} HTML entit{ies}",
}


def describe_counts(counts: Mapping[str, int], phrases: Mapping[str, str]) -> list[str]:
    """The steps a pass reports: one per kind of edit it made at least once, in the order
    of ``phrases`` (``{n}``: the count; ``{s}``, ``{ies}``: the plural endings).

    One wording rule for every pass, so the steps a user reads are phrased alike."""
    return [
        phrase.format(n=n, s="s" * (n != 1), ies="ies" if n != 1 else "y")
        for kind, phrase in phrases.items()
        if (n := counts[kind])
    ]


def _lines_holding(src: str, needle: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``src`` that holds ``needle``, in order, found with
    `str.find`: the line-anchored markup regexes are run on those lines only, since a
    pattern that opens with ``^`` or a lookbehind is tried at every position of the text."""
    out: list[tuple[int, int]] = []
    at = src.find(needle)
    while at >= 0:
        start = src.rfind("\n", 0, at) + 1
        end = src.find("\n", at)
        end = len(src) if end < 0 else end
        out.append((start, end))
        at = src.find(needle, end)
    return out


def lines_opening(src: str, char: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``src`` that starts with ``char``."""
    out: list[tuple[int, int]] = []
    at = 0 if src.startswith(char) else src.find("\n" + char) + 1 or -1
    while at >= 0:
        end = src.find("\n", at)
        end = len(src) if end < 0 else end
        out.append((at, end))
        at = src.find("\n" + char, end) + 1 or -1
    return out


def _on_lines(rx: re.Pattern[str], src: str, lines: list[tuple[int, int]]) -> list[re.Match[str]]:
    """``rx.finditer(src)`` where its matches can only lie on ``lines`` (a line-anchored
    pattern under `re.M`: ``^`` holds at a line's start, ``$`` at ``endpos``, and a
    lookbehind still sees the character before it), searched on those lines alone."""
    return [m for start, end in lines for m in rx.finditer(src, start, end)]


def clean_markup(src: str) -> tuple[str, Layer | None, list[str]]:
    """Strip code fences, `> ` quote markers, <pre>/<code> tags; decode HTML entities."""
    # single characters first: `in` on one character runs at memchr speed
    has_fence = ("`" in src and "```" in src) or ("~" in src and "~~~" in src)
    has_quote = ">" in src and (src.startswith(">") or "\n>" in src)
    has_tag = "<" in src and _TAG_RE.search(src) is not None
    has_entity = "&" in src and ";" in src and _ENTITY_RE.search(src) is not None
    if not (has_fence or has_quote or has_tag or has_entity):
        return src, None, []
    edits: list[tuple[int, int, str]] = []
    counts = dict.fromkeys(_MARKUP_STEPS, 0)
    if has_fence:
        ticks = _lines_holding(src, "```")
        fenced = sorted({*ticks, *_lines_holding(src, "~~~")})
        for m in _on_lines(_FENCE_LINE_RE, src, fenced):
            if m.end() > m.start():
                edits.append((m.start(), m.end(), ""))
                counts["fence"] += 1
        for m in _on_lines(_FENCE_GLUED_RE, src, ticks):
            edits.append((m.start(), m.end(), ""))
            counts["fence"] += 1
    if has_quote:
        for m in _on_lines(_QUOTE_RE, src, lines_opening(src, ">")):
            edits.append((m.start(), m.end(), ""))
            counts["quote"] += 1
    if has_tag:
        for m in _TAG_RE.finditer(src):
            edits.append((m.start(), m.end(), "\n" if m.group().lower().startswith("<br") else ""))
            counts["tag"] += 1
    if has_entity:
        for m in _ENTITY_RE.finditer(src):
            ent = m.group()
            dec = html.unescape(ent)
            if dec != ent:
                edits.append((m.start(), m.end(), dec))
                counts["entity"] += 1
    if not edits:
        return src, None, []
    edits.sort(key=lambda x: (x[0], -x[1]))
    b = Builder()
    pos = 0
    for s, e, repl in edits:
        if s < pos:  # overlapping edit (e.g. a quote marker inside a fence line): skip
            continue
        b.copy(src, pos, s)
        if repl:
            b.emit(repl, s, e)
        pos = e
    b.copy(src, pos, len(src))
    out, layer = b.finish(len(src))
    return out, layer, describe_counts(counts, _MARKUP_STEPS)


# --- typographic quotes and dashes (folded on copies of lines, not in place) ----------

TYPO_CHARS = (
    "\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u201f\u2033"
    "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2026"
)
TYPO_RE = re.compile(f"[{TYPO_CHARS}]")
FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)
