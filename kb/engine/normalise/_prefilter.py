"""Whole logs: decide in one Hyperscan pass whether the normaliser has anything to do.

The normaliser's fast paths are C-speed presence checks (`in`, `str.isascii`, one compiled
search), but there are about ten of them, each a full pass over the text: on a large plain
log they add up to a large share of the whole match. In a whole log (> `BIG_TEXT`, where only
structural lines are visited) the text is left exactly as pasted unless one of a known set
of *triggers* occurs: a control character, one of the non-ASCII characters the passes fold
or drop, a code fence, a quote marker, an HTML tag or entity, a structural line start
(indented, traceback, panic, JSON object), an escaped quote, a JSON object. Those triggers
are literal-ish byte patterns, so one Hyperscan database finds the first of them in a
single pass at memory speed. Only the regions around triggers are then normalised
(`_regions.py`); the rest of the text is scanned as pasted.

The triggers are derived from the passes' own constants, and may over-approximate (a false
trigger only means the normal path runs); they must never miss, which
tests/engine/test_normalise_props.py checks against the full normaliser.
"""

from __future__ import annotations

import threading

import hyperscan

from ._clean import _C1_CHARS, _SPACE_CHARS, _ZERO_WIDTH_CHARS, TYPO_CHARS
from ._structure import HOT_LINE_BIG_ALTERNATIVES


def _literal(s: str) -> str:
    """A Hyperscan expression matching the UTF-8 bytes of ``s`` literally."""
    return "".join(f"\\x{b:02x}" for b in s.encode("utf-8"))


def trigger_expressions() -> list[str]:
    """Byte patterns whose absence guarantees that every pass leaves a big text unchanged."""
    exprs = [
        r"[\x00-\x08\x0b-\x1f\x7f]",  # controls, CR, ESC (clean_controls)
        r"```|~~~",  # code fences (clean_markup)
        r"\n>",  # quote markers; a text starting with ">" is checked by the caller
        r"<(?:/?(?:pre|code|samp|kbd|tt)|br)",  # tags (clean_markup, caseless below)
        r"&(?:#|[A-Za-z][A-Za-z0-9]{1,31};)",  # entities
        r"\{\"",  # JSON objects (structure pass)
        r"\\\"",  # escaped quotes (structure pass)
        r"\n(?:" + HOT_LINE_BIG_ALTERNATIVES + ")",  # structural line starts
    ]
    chars = sorted(set(_C1_CHARS) | set(_SPACE_CHARS) | set(_ZERO_WIDTH_CHARS) | set(TYPO_CHARS))
    exprs.extend(_literal(c) for c in chars)
    return exprs


_DB = None
_DB_LOCK = threading.Lock()
_LOCAL = threading.local()


def _database():
    global _DB
    if _DB is None:
        with _DB_LOCK:
            if _DB is None:
                exprs = trigger_expressions()
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                flags = [hyperscan.HS_FLAG_DOTALL] * len(exprs)
                flags[3] |= hyperscan.HS_FLAG_CASELESS
                ids = list(range(len(exprs)))
                db.compile(expressions=[e.encode() for e in exprs], ids=ids, flags=flags)
                _DB = db
    return _DB


def trigger_ends(data: bytes, cap: int) -> list[int] | None:
    """End offsets of the triggers in ``data`` (UTF-8), or None when there are more than
    ``cap`` of them (then normalising everything is cheaper)."""
    db = _database()
    scratch = getattr(_LOCAL, "scratch", None)
    if scratch is None:
        scratch = _LOCAL.scratch = hyperscan.Scratch(db)
    ends: list[int] = []
    append = ends.append

    def on_match(_id: int, _frm: int, to: int, _flags: int, _ctx: object) -> bool:
        append(to)
        return len(ends) > cap  # True stops the scan

    try:
        db.scan(data, match_event_handler=on_match, scratch=scratch)
    except hyperscan.ScanTerminated:
        return None
    return None if len(ends) > cap else ends
