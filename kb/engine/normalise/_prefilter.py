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

import re
import threading

import hyperscan

from ._clean import _C1_CHARS, _SPACE_CHARS, _ZERO_WIDTH_CHARS, TYPO_CHARS
from ._envelopes import ENVELOPES
from ._structure import HOT_LINE_BIG, HOT_LINE_BIG_ALTERNATIVES


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
    return _match_ends(_database(), "scratch", data, cap)


def _scratch(db: hyperscan.Database, name: str) -> hyperscan.Scratch:
    """This thread's scratch ``name`` for ``db`` (a scratch is one scan's at a time)."""
    scratch = getattr(_LOCAL, name, None)
    if scratch is None:
        scratch = hyperscan.Scratch(db)
        setattr(_LOCAL, name, scratch)
    return scratch


def _match_ends(db: hyperscan.Database, name: str, data: bytes, cap: int) -> list[int] | None:
    """End offsets of every match of ``db`` in ``data`` (with this thread's scratch
    ``name``), or None past ``cap`` of them (the scan stops there)."""
    ends: list[int] = []
    append = ends.append

    def on_match(_id: int, _frm: int, to: int, _flags: int, _ctx: object) -> bool:
        append(to)
        return len(ends) > cap  # True stops the scan

    try:
        db.scan(data, match_event_handler=on_match, scratch=_scratch(db, name))
    except hyperscan.ScanTerminated:
        return None
    return None if len(ends) > cap else ends


# Where a chained exception is told (Java's and anyhow's "Caused by", Python's "The above
# exception ..."): a whole log read in blocks keeps the chain around each
# (`kb.engine.logstream`).
CHAIN_MARKERS = (b"Caused by", b"above exception")
_MARKER_DB: list[hyperscan.Database] = []


def chain_marker_ends(data: bytes) -> list[int]:
    """End offsets of every `CHAIN_MARKERS` in ``data``: Hyperscan's literal search, many
    times the pace of a regex's over a whole log."""
    if not _MARKER_DB:
        with _DB_LOCK:
            if not _MARKER_DB:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                exprs = [_literal(m.decode()) for m in CHAIN_MARKERS]
                db.compile(expressions=exprs, ids=list(range(len(exprs))))
                _MARKER_DB.append(db)
    return _match_ends(_MARKER_DB[0], "marker_scratch", data, len(data)) or []


# -- whole logs with envelopes (`normalise_log`) ------------------------------------------
# Kinds of log trigger, by Hyperscan id: below LEVEL a trigger of `trigger_expressions`;
# LEVEL an error-level word (a line worth its envelope removed, with a line of context);
# ENVELOPED a structural line start behind a collector envelope (a continuation, a frame).
LEVEL = 1000
ENVELOPED = 1001
JSON_ID = 5  # `trigger_expressions()[5]`: a JSON object
ESCAPED_QUOTE_ID = 6  # `trigger_expressions()[6]`: an escaped quote
_LEVEL_EXPR = r"\b(?:ERROR|FATAL|CRITICAL|SEVERE|PANIC|ERR|WARN|WARNING|Exception|Error)\b"
# an application's padded level after a timestamp is its own layout, not an indent
_OWN_INDENT = r"\t|[ \t][ \t]|[ ][^A-Z \t]"


def _hs_envelope(rx: str) -> str:
    """An envelope's regex as Hyperscan takes it: names dropped, lookaheads loosened (an
    over-approximation only costs a region)."""
    rx = re.sub(r"\(\?P<\w+>", "(?:", rx)
    return rx.replace("(?: |(?=\\n)|\\Z)", " ")


def enveloped_structure_expressions() -> list[str]:
    """A structural line start (`HOT_LINE_BIG`) behind each envelope that repeats on every
    line: where the structure pass must see a line without its envelope. One expression
    for each envelope and structure, not one for each envelope with the structures
    as alternatives: Hyperscan then looks for the literal an expression ends with (a
    prefix's delimiter and a structure's first characters), which is rare, instead of
    running every envelope's prefix at every line start."""
    out = []
    for env in ENVELOPES:
        if env.min_run == 1 or env.whole_line:
            continue
        for hot in HOT_LINE_BIG:
            if hot == r"\{":
                hot = r'\{[^"]'  # `{"`: its own trigger
            elif hot == r"[ \t]" and env.own is not None:
                hot = _OWN_INDENT
            out.append(r"(?:\A|\n)" + _hs_envelope(env.rx) + "(?:" + hot + ")")
    return out


_LOG_DB = None


def _log_database():
    global _LOG_DB
    if _LOG_DB is None:
        with _DB_LOCK:
            if _LOG_DB is None:
                base = trigger_expressions()
                # a line opening with `{"` is a JSON line, found by its own trigger: one
                # callback a line, not two (a quiet JSON line is dropped in Python)
                base[7] = base[7].replace("|\\{|", '|\\{[^"]|', 1)
                env = enveloped_structure_expressions()
                # JSON objects are found by `_LOUD_JSON_RE` (a quiet JSON line is no trigger)
                keep = [i for i in range(len(base)) if i != JSON_ID]
                exprs = [*(base[i] for i in keep), _LEVEL_EXPR, *env]
                ids = [*keep, LEVEL, *[ENVELOPED] * len(env)]
                flags = [hyperscan.HS_FLAG_DOTALL] * len(exprs)
                flags[keep.index(3)] |= hyperscan.HS_FLAG_CASELESS
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                db.compile(expressions=[e.encode() for e in exprs], ids=ids, flags=flags)
                _LOG_DB = db
    return _LOG_DB


def log_triggers(data: bytes, cap: int) -> list[tuple[int, int]] | None:
    """(end offset, kind id) of every log trigger in ``data``, or None past ``cap`` of them.

    A JSON object or an escaped quote on a JSON line of a quiet level is no trigger: a
    whole log's structure pass leaves such lines as they are (`_json_lines`). JSON
    objects are found by one C-speed regex that skips the quiet ones (a Hyperscan
    callback a JSON line would cost more than the scan)."""
    db = _log_database()
    scratch = _scratch(db, "log_scratch")
    out: list[tuple[int, int]] = [(m.start() + 2, JSON_ID) for m in _LOUD_JSON_RE.finditer(data)]
    if len(out) > cap:
        return None
    append = out.append
    rfind, find = data.rfind, data.find
    quiet = (-1, -1)  # (start, end) of the last line found quiet
    n = len(data)

    def on_match(hid: int, _frm: int, to: int, _flags: int, _ctx: object) -> bool:
        nonlocal quiet
        if hid == ESCAPED_QUOTE_ID:
            if quiet[0] < to <= quiet[1]:
                return False  # another one on the quiet line just read
            ls = rfind(b"\n", 0, max(to - 1, 0)) + 1
            js = find(b"{", ls, to)
            le = find(b"\n", to)
            le = n if le < 0 else le
            m = _JSON_LEVEL_BYTES_RE.search(data, js, min(le, js + 400)) if js >= 0 else None
            if m is not None and m.group(1).upper() in _QUIET:
                quiet = (ls, le)
                return False
        append((to, hid))
        return len(out) > cap  # True stops the scan

    try:
        db.scan(data, match_event_handler=on_match, scratch=scratch)
    except hyperscan.ScanTerminated:
        return None
    return None if len(out) > cap else out


_JSON_LEVEL_BYTES_RE = re.compile(
    rb'"(?:level|levelname|severity|lvl|log\.level)"\s*:\s*"([A-Za-z]+)"', re.I
)
_QUIET = frozenset({b"TRACE", b"DEBUG", b"INFO"})
# A JSON object (`{"`) unless the first level key within reach of it names a quiet level
# (what `_json_lines` reads: then a whole log's structure pass leaves the line as it is).
_LEVEL_KEY = rb'"(?:level|levelname|severity|lvl|log\.level)"\s*:\s*"'
_LOUD_JSON_RE = re.compile(
    rb'\{(?=")(?!(?:(?!'
    + _LEVEL_KEY
    + rb")[^\n]){0,400}"
    + _LEVEL_KEY
    + rb'(?:trace|debug|info)")',
    re.I,
)
