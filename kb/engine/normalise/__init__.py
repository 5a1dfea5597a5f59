"""The log normaliser: turn a messy paste into text the pattern engine can scan.

People paste logs with ANSI colours, CRLF line ends, timestamps and levels, JSON log lines
with escaped quotes, Markdown fences, typographic quotes, hard-wrapped and pretty-printed
messages and stack traces. The matcher runs every record's ``messagePattern`` over
`Normalised.text`; this module makes that text, keeps every position mappable back to the
pasted original (`Normalised.to_original`), says what it did (`Normalised.steps`) and tells
the ranking what kind of line a hit is on (`Normalised.line_info`: exception, cause, frame,
log line with level, ...).

Design:

* Character-level cleaning (ANSI/OSC codes, control characters, CRLF, fences, quote
  markers, HTML entities) rewrites the text; each pass that changes something adds a
  segment-table `Layer`, and `to_original` maps through the layers by bisection.
* Line-level work never rewrites a pasted line: it inserts *variant* lines after it (a JSON
  line's decoded values, a wrapped message joined, quotes folded to ASCII). Variants map back
  to the characters they were made from. The matcher de-duplicates hits by key.
* Prefixes the application writes stay in the scanned text (patterns are unanchored);
  `strip_prefix` gives their length and `LineInfo.body_start` where a line's message starts.
  Envelopes a collector repeats on every physical line (`kubectl logs --prefix`, journald,
  CI runners) are removed before the structure pass, or a wrapped message would carry one
  in the middle of its text (`_envelopes`); each removal is a deletion `Layer`.
* Fast paths: C-speed presence checks; a plain log is returned as is (``text is original``).
  Only lines that need a look are visited in Python (unprefixed, JSON, escaped quotes,
  typographic quotes); in a whole log (past `BIG_TEXT`) only structural ones (indented lines,
  traceback/panic headers, JSON), and INFO/DEBUG JSON lines are not decoded there. A whole
  log is not even passed over by the Python passes: one Hyperscan scan finds the triggers
  of every pass (`_prefilter`), only the regions around them are normalised and the rest
  is copied (`_regions`; falls back to the full passes when triggers are dense).
* Whole logs in the matcher (`normalise_log`): `normalise` judges a log's envelopes by its
  start and, when it holds one, removes them line by line through all of it. The matcher
  instead removes envelopes only inside the regions, wherever in the log they are; its
  triggers add error-level lines (a line either side: the envelope's run) and structural
  lines behind an envelope (a continuation, a frame), and drop JSON lines of a quiet level.
  Lines outside every region are scanned with their envelope (patterns are unanchored).
* Never raises: any internal error degrades to the identity normalisation with a step
  saying so (the property tests assert that this never actually happens).

Modules: `_clean` (character passes), `_envelopes` and `_exports` (collector envelopes,
log-service exports), `_prefix` (log prefixes and levels), `_classify` (one line's kind),
`_structure` (variant lines, marks; with its parts `_joins` for wraps and pretty-printed
values, `_json_lines` for JSON log lines, `_stacks` for tracebacks and panics), `_escapes`
(JSON/backslash decoding), `_traceback` (Python traceback helpers), `_mapping` (segment
tables), `_prefilter` and `_regions` (whole logs).

Pure Python, standard library only (plus `hyperscan`, optional, for whole logs), no Django.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, count, islice
from operator import add
from typing import final

from ..textmap import Text, Utf8Text
from . import _structure
from ._classify import CAUSED_BY, EXCEPTION, FRAME, LOG, TEXT, classify
from ._clean import clean_controls, clean_markup, drop_zero_width, fold_spaces
from ._envelopes import envelopes_in_sample, strip_envelopes
from ._mapping import Layer
from ._prefix import prefix_info, strip_prefix
from ._regions import RegionLayer, char_regions, merge_steps, plan, plan_log
from ._structure import Mark, Structurer

__all__ = [
    "CAUSED_BY",
    "EXCEPTION",
    "FRAME",
    "LOG",
    "TEXT",
    "LineInfo",
    "Normalised",
    "normalise",
    "normalise_excerpt",
    "normalise_log",
    "prefix_info",
    "strip_prefix",
]

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class LineInfo:
    """One logical line of `Normalised.text`."""

    start: int  # offset in .text
    end: int  # offset in .text, excluding the "\n"
    orig_start: int  # the original range it comes from
    orig_end: int
    line: int  # 1-based line number in the original (of orig_start)
    kind: str  # "exception" | "caused_by" | "frame" | "log" | "text"
    level: str | None  # "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "FATAL" | None
    body_start: int  # offset in .text where the message starts (after prefix / exception class)
    exc_type: str | None  # exception class when the line names one ("a.b.FooError")
    derived: str | None  # None for a pasted line; "json" | "unescaped" | "joined" |
    #                      "collapsed" | "folded" for a variant line added by the normaliser


class Normalised:
    """The scanned text, the original, and the mapping between them."""

    __slots__ = (
        "_layers",
        "_lines",
        "_marks",
        "_orig_starts",
        "encoded",
        "original",
        "steps",
        "text",
    )

    def __init__(
        self,
        original: Text,
        text: str,
        steps: list[str],
        layers: tuple[Layer | RegionLayer, ...] = (),
        marks: dict[int, Mark] | None = None,
    ) -> None:
        # a whole log's excerpt is held as its UTF-8 (`Utf8Text`): a `str` of it would be
        # twice its bytes or more, beside the normalised text, for the few lines read
        self.original = original
        self.text = text
        self.steps = steps
        self._layers = layers
        self._marks = marks or {}
        self._orig_starts: array | _LineIndex | None = None
        # text.encode("utf-8", "replace") when known (a whole log's: the buffer it was
        # written into, not copied again)
        self.encoded: bytes | bytearray | None = None
        self._lines: list[LineInfo] | None = None

    def __repr__(self) -> str:
        return (
            f"Normalised(len={len(self.text)}, orig_len={len(self.original)}, steps={self.steps!r})"
        )

    @property
    def identity(self) -> bool:
        """True when the scanned text is the original, unchanged."""
        return not self._layers and self.text == self.original

    # -- offsets --------------------------------------------------------------------------
    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a span of `text` to the span of `original` it was made from."""
        n = len(self.text)
        start = min(max(int(start), 0), n)
        end = min(max(int(end), start), n)
        if not self._layers:
            return start, end
        for layer in reversed(self._layers):
            start, end = layer.map_span(start, end)
        return start, end

    def line_of(self, orig_offset: int) -> int:
        """1-based line number in `original` of an original offset (CRLF, CR, LF all count)."""
        starts = self._orig_starts
        if starts is None:
            o = self.original
            starts = self._orig_starts = _line_starts(str(o)) if "\r" in o else _LineIndex(o)
        off = min(max(int(orig_offset), 0), len(self.original))
        if type(starts) is _LineIndex:
            return starts.line_of(off)
        return bisect_right(starts, off)

    def line_bounds(self, start: int, end: int) -> tuple[int, int]:
        """The logical line(s) of `text` containing ``[start, end)``, without the "\\n"."""
        t = self.text
        n = len(t)
        start = min(max(int(start), 0), n)
        end = min(max(int(end), start), n)
        ls = t.rfind("\n", 0, start) + 1
        probe = end - 1 if end > start else end
        le = t.find("\n", max(probe, ls))
        return ls, (n if le < 0 else le)

    # -- line information ---------------------------------------------------------------
    def line_info(self, offset: int) -> LineInfo:
        """Kind, level and message start of the logical line of `text` containing ``offset``."""
        ls, le = self.line_bounds(offset, offset)
        return self._info(ls, le)

    @property
    def lines(self) -> list[LineInfo]:
        """Every logical line (computed on first use; for whole logs prefer `line_info`)."""
        if self._lines is None:
            out = []
            pos = 0
            t = self.text
            n = len(t)
            while pos <= n:
                le = t.find("\n", pos)
                if le < 0:
                    le = n
                out.append(self._info(pos, le))
                pos = le + 1
            self._lines = out
        return self._lines

    def _info(self, ls: int, le: int) -> LineInfo:
        line = self.text[ls:le]
        kind, level, body, exc_type = classify(line)
        mark = self._marks.get(ls)
        derived = None
        if mark is not None:
            derived = mark.derived
            if mark.kind is not None:
                kind = mark.kind
            elif derived is not None and kind == TEXT:
                kind = LOG if mark.level else TEXT
            if mark.level is not None:
                level = mark.level
            if mark.body >= 0:
                body = mark.body
            if mark.exc_type is not None:
                exc_type = mark.exc_type
        os, oe = self.to_original(ls, le)
        return LineInfo(
            start=ls,
            end=le,
            orig_start=os,
            orig_end=oe,
            line=self.line_of(os),
            kind=kind,
            level=level,
            body_start=ls + min(max(body, 0), le - ls),
            exc_type=exc_type,
            derived=derived,
        )


_LINE_CHUNK = 1 << 12


@final  # `line_of` tells it from an array by `type(...) is`, which needs no subclasses
class _LineIndex:
    """line_of for a text without CR: newlines counted per fixed-size chunk (C-speed
    `count`, built lazily chunk by chunk), then within the chunk on each query. A text
    held as UTF-8 (`Utf8Text`) is counted in its bytes, from one offset conversion."""

    __slots__ = ("_cum", "_s", "_utf8")

    def __init__(self, s: Text) -> None:
        self._s: str | bytes = s.data if isinstance(s, Utf8Text) else s
        self._utf8 = s if isinstance(s, Utf8Text) else None
        self._cum = array("q", [0])  # newlines before chunk k

    def line_of(self, off: int) -> int:
        s = self._s
        nl = b"\n" if isinstance(s, bytes) else "\n"
        if self._utf8 is not None:
            off = self._utf8.byte_offset(off)
        cum = self._cum
        k = off // _LINE_CHUNK
        while len(cum) <= k:
            j = len(cum) - 1
            cum.append(cum[j] + s.count(nl, j * _LINE_CHUNK, (j + 1) * _LINE_CHUNK))  # type: ignore[arg-type]
        return cum[k] + s.count(nl, k * _LINE_CHUNK, off) + 1  # type: ignore[arg-type]


def _line_starts(s: str) -> array:
    """Offsets where each line of ``s`` starts (CRLF, lone CR and LF all end a line)."""
    starts = array("q", [0])
    if "\r" not in s:
        # start of line i+1 = lengths of lines 0..i + i+1 newlines; all at C speed
        parts = s.split("\n")
        starts.extend(map(add, accumulate(map(len, islice(parts, len(parts) - 1))), count(1)))
        return starts
    starts.extend(m.end() for m in _NEWLINE_RE.finditer(s))
    return starts


def normalise(text: str, *, encoded: bytes | None = None) -> Normalised:
    """Normalise a pasted log for scanning. Never raises on a `str`.

    ``encoded`` (optional) is ``text.encode("utf-8", "replace")`` when the caller has it
    already: a whole log is then checked for work in one pass over those bytes.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    try:
        if len(text) > _structure.BIG_TEXT and not envelopes_in_sample(text):
            # a whole log is judged by its start (see `envelopes_in_sample`)
            fast = _normalise_regions(text, encoded)
            if fast is not None:
                return fast
            return _normalise(text, envelopes=False)
        return _normalise(text)
    except Exception as exc:  # a bug here must not lose the user's paste
        return Normalised(
            text,
            text,
            [f"normalisation failed ({type(exc).__name__}); scanning the text as pasted"],
        )


def normalise_log(text: str, *, encoded: bytes | None = None) -> Normalised:
    """`normalise` for a whole log that may hold collector envelopes anywhere. Never raises.

    `normalise` judges a whole log's envelopes by its start and, when it holds one,
    removes them line by line all through: a Python step per line, many times the cost of
    scanning the log. Here envelopes are removed only where they matter to what is
    matched and how it reads -- around error-level lines, structural lines (also behind an
    envelope: a continuation, a frame) and the other triggers of `_prefilter` -- as part
    of normalising those regions; every other line is scanned as pasted, envelope and all
    (patterns are unanchored). Pastes (up to `BIG_TEXT`) go through `normalise`; the
    excerpt of a bigger log, through `normalise_excerpt`.
    """
    if not isinstance(text, str) or len(text) <= _structure.BIG_TEXT:
        return normalise(text, encoded=encoded)
    try:
        data = text.encode("utf-8", "replace") if encoded is None else encoded
        regions = plan_log(data, text)
        got = None if regions is None else _normalise_regions(text, data, regions, envelopes=True)
        if got is not None:
            return got
    except Exception:  # noqa: S110 - `normalise` below says what failed, if it does
        pass
    return normalise(text, encoded=encoded)


def normalise_excerpt(data: bytes, chars: int, windows: list[list[int]] | None) -> Normalised:
    """`normalise_log` for the excerpt of a bigger log (`kb.engine.logstream`), given as its
    UTF-8 ``data`` of ``chars`` characters: normalised as that log would be, by
    ``windows``, its `log_windows` planned against the log's size (None: dense, so
    normalised in one go). The regions' text is decoded from ``data`` and the normalised
    text from the joined bytes; the excerpt's own text is read from ``data``
    (`Normalised.original`, a `Utf8Text`), never decoded whole. ``windows`` is emptied
    once read (`char_regions`)."""
    try:
        if windows is not None:
            regions = char_regions(data, chars, windows)
            got = _normalise_regions(None, data, regions, envelopes=True, chars=chars)
            if got is not None:
                return got
    except Exception:  # noqa: S110 - `normalise` below says what failed, if it does
        pass
    return normalise(data.decode("utf-8"), encoded=data)


def _normalise_regions(
    original: str | None,
    encoded: bytes | None,
    regions: Iterable[tuple[int, int, int, int]] | None = None,
    *,
    envelopes: bool = False,
    chars: int = 0,
) -> Normalised | None:
    """A whole log: normalise only the regions around triggers (see `_regions.py`).

    ``original`` None: the text is ``encoded``, ``chars`` characters of valid UTF-8 (an
    excerpt of a log read in blocks, `normalise_excerpt`), so it holds no lone surrogate:
    each region's text is decoded from its bytes and the normalised text from the joined
    bytes rather than joined from pieces, and the original is left as bytes."""
    if original is None:
        assert encoded is not None
        assert regions is not None
        data, length = encoded, chars
    else:
        data = original.encode("utf-8", "replace") if encoded is None else encoded
        length = len(original)
    if regions is None:
        assert original is not None
        regions = plan(data, original)
    if regions is None:
        return None
    layer = RegionLayer(0, length)
    texts: list[str] | None = None if original is None else []
    # the scanned bytes written as they are made: one buffer, not a piece a region held
    # until the end (freed then, they would stay in the heap as holes)
    buf = bytearray()
    view = memoryview(data)
    marks: dict[int, Mark] = {}
    steps: list[list[str]] = []
    replaced: list[tuple[int, str]] = []  # (offset, text) of regions with a lone surrogate
    out = cpos = bpos = 0
    changed = False
    for bs, be, cs, ce in regions:
        if cs > cpos:
            layer.add(out, cpos, None)
            if texts is not None:
                texts.append(original[cpos:cs])  # type: ignore[index] # texts: original
            buf += view[bpos:bs]
            out += cs - cpos
        sub = data[bs:be].decode("utf-8") if original is None else original[cs:ce]
        n = _normalise(sub, big=True, visit_first=cs == 0, envelopes=envelopes)
        if texts is not None:
            texts.append(n.text)
        if n.text is sub and not n._layers:
            layer.add(out, cs, None)  # unchanged: maps as a copied gap does
            buf += view[bs:be]
        else:
            # the region maps through its own layers alone: a whole log's regions keep no
            # second copy of their text, nor of their marks
            layer.add(out, cs, n._layers)
            changed = True
            try:
                buf += n.text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate, should a pass make one: a "?"
                buf += n.text.encode("utf-8", "replace")
                replaced.append((out, n.text))
        for k, m in n._marks.items():
            marks[out + k] = m
        steps.append(n.steps)
        out += len(n.text)
        cpos, bpos = ce, be
    if not changed:
        del view
        same = data.decode("utf-8") if original is None else original
        res = Normalised(same, same, merge_steps(steps), (), marks)
        res.encoded = data
        return res
    if cpos < length:
        layer.add(out, cpos, None)
        if texts is not None:
            texts.append(original[cpos:])  # type: ignore[index] # texts: original
        buf += view[bpos:]
        out += length - cpos
    del view
    if texts is not None:
        text = "".join(texts)
    else:
        text = buf.decode("utf-8")
        if replaced:  # the region's own text where its bytes hold a "?" for a surrogate
            text = _spliced(text, replaced)
    layer.out_len = len(text)
    res = Normalised(
        Utf8Text(data) if original is None else original,
        text,
        merge_steps(steps),
        (layer,),
        marks,
    )
    res.encoded = buf  # scanned as it is: a copy as bytes would double a whole log's
    return res


def _spliced(text: str, pieces: list[tuple[int, str]]) -> str:
    """``text`` with each (offset, piece) written over as many characters at that offset."""
    out: list[str] = []
    pos = 0
    for at, piece in pieces:
        out.append(text[pos:at])
        out.append(piece)
        pos = at + len(piece)
    out.append(text[pos:])
    return "".join(out)


def _normalise(
    original: str, *, big: bool | None = None, visit_first: bool = True, envelopes: bool = True
) -> Normalised:
    layers: list[Layer] = []
    steps: list[str] = []
    cur = original
    for step in (clean_controls, drop_zero_width, clean_markup):
        cur, layer, st = step(cur)
        if layer is not None:
            layers.append(layer)
        steps.extend(st)
    if envelopes:
        # before the structure pass: a wrapped message must lose the envelope repeated on
        # its continuation lines before the joins can see that they continue it
        cur, env_layers, st = strip_envelopes(cur)
        if env_layers:
            layers.extend(env_layers)
            steps.extend(st)
            # markup the envelope hid (a code fence on an enveloped line) is at a line
            # start now
            cur, layer, st = clean_markup(cur)
            if layer is not None:
                layers.append(layer)
            steps.extend(st)
    cur, st = fold_spaces(cur)
    steps.extend(st)
    cur, layer, marks, st = Structurer(cur, big=big, visit_first=visit_first).run()
    if layer is not None:
        layers.append(layer)
    steps.extend(st)
    if cur == original and not layers:
        cur = original  # same object: callers may test `text is original`
    return Normalised(original, cur, steps, tuple(layers), marks)
