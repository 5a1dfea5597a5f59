"""Whole logs: normalise only the regions around triggers, scan the rest as pasted.

In a whole log (> `BIG_TEXT` characters) the structure pass only visits structural lines,
and the character passes only touch what their triggers mark (`_prefilter.py`). So the
text is cut into *regions*: every trigger's line, one line before it (a wrapped run may
start there) and `AFTER_LINES` after it (runs, tracebacks and panics end within that;
their own structural lines are triggers and extend the region), merged when they touch;
line 0 is always a region (the structure pass always looks at it). Each region is
normalised on its own, as part of a whole log; the gaps between them are copied. One
`RegionLayer` maps the result back to the original by bisection over the regions.

When triggers are dense (ANSI colour on every line, an indented dump) the regions would
cover most of the text anyway and the caller normalises it all in one go instead.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..textmap import utf8_chars
from ._prefilter import ESCAPED_QUOTE_ID, JSON_ID, LEVEL, log_triggers, trigger_ends

if TYPE_CHECKING:
    from ._mapping import Layer

AFTER_LINES = 64
MAX_TRIGGERS_PER_BYTE = 1 / 2048
MAX_REGION_SHARE = 0.5


def plan(data: bytes, original: str) -> Iterator[tuple[int, int, int, int]] | None:
    """Regions as (byte start, byte end, char start, char end), or None: normalise it all.

    Starts are line starts; ends are the offset of a "\\n" or the text's length.
    """
    ends = trigger_ends(data, max(64, int(len(data) * MAX_TRIGGERS_PER_BYTE)))
    if ends is None:
        return None
    ends.append(1)  # line 0
    ends.sort()
    return _regions(data, original, [(e, AFTER_LINES) for e in ends])


def plan_log(data: bytes, original: str) -> Iterator[tuple[int, int, int, int]] | None:
    """`plan` for a whole log whose envelopes are removed only around its triggers
    (`normalise_log`): the triggers of `plan`, structural lines behind an envelope (as many
    lines after them), and error-level lines (one line either side: the envelope's run;
    so too JSON objects and escaped quotes, whose work is on their own line)."""
    windows = log_windows(data, len(data))
    if windows is None:
        return None
    return char_regions(data, len(original), windows)


def log_windows(data: bytes, size: int | None) -> list[list[int]] | None:
    """`plan_log`'s regions as [byte start, byte end] (the end at a "\\n" or the length);
    None when dense for a log of ``size`` bytes; never None when ``size`` is None (a block
    of a log read in chunks: which lines a region holds, however many there are)."""
    cap = len(data) + 1 if size is None else max(64, int(size * MAX_TRIGGERS_PER_BYTE))
    found = log_triggers(data, cap)
    if found is None:
        return None
    found.append((1, 0))  # line 0
    found.sort()
    near = (LEVEL, JSON_ID, ESCAPED_QUOTE_ID)  # a line's own work: a line of context each side
    triggers = [(e, 1 if k in near else AFTER_LINES) for e, k in found]
    return _windows(data, triggers, None if size is None else MAX_REGION_SHARE * size)


def _regions(
    data: bytes, original: str, triggers: list[tuple[int, int]]
) -> Iterator[tuple[int, int, int, int]] | None:
    """Windows of lines around sorted (trigger end, lines after it), merged when they
    touch; None when they would cover more than `MAX_REGION_SHARE` of the text."""
    windows = _windows(data, triggers, MAX_REGION_SHARE * len(data))
    return None if windows is None else char_regions(data, len(original), windows)


def _windows(
    data: bytes, triggers: list[tuple[int, int]], max_covered: float | None
) -> list[list[int]] | None:
    n = len(data)
    windows: list[list[int]] = []
    line_end = -1
    line_after = 0
    find, rfind = data.find, data.rfind
    covered = 0
    for e, after in triggers:
        pos = max(e - 1, 0)
        if pos < line_end and after <= line_after:
            continue  # another trigger on the line just handled
        ls = rfind(b"\n", 0, pos) + 1
        le = find(b"\n", pos)
        le = n if le < 0 else le
        line_end = le
        line_after = after
        start = rfind(b"\n", 0, ls - 1) + 1 if ls > 0 else 0
        end = le
        for _ in range(after):
            if end >= n:
                break
            nxt = find(b"\n", end + 1)
            end = n if nxt < 0 else nxt
        if windows and start <= windows[-1][1] + 1:
            covered += max(0, end - windows[-1][1])
            windows[-1][1] = max(windows[-1][1], end)
        else:
            covered += end - start
            windows.append([start, end])
        if max_covered is not None and covered > max_covered:
            return None
    return windows


def char_regions(
    data: bytes, chars: int, windows: list[list[int]]
) -> Iterator[tuple[int, int, int, int]]:
    """(byte start, byte end, char start, char end) of each window of ``data``, the valid
    UTF-8 of a text of ``chars`` characters, made as they are read; ``windows`` is emptied
    once read (a whole log has too many to hold as windows and as regions, or to hold
    while the normalised text is made)."""
    if len(data) == chars:  # ASCII: byte and char offsets agree
        for s, e in windows:
            yield s, e, s, e
    else:
        cb = cc = 0
        for s, e in windows:  # counted between boundaries (line starts/ends), not decoded
            cc += utf8_chars(data, cb, s)
            cs = cc
            cc += utf8_chars(data, s, e)
            cb = e
            yield s, e, cs, cc
    windows.clear()


class RegionLayer:
    """Maps offsets of the joined text back to the original: gaps are copies, regions
    map through their own layers (those of the region's `Normalised`)."""

    __slots__ = ("in_len", "layers", "orig_starts", "out_len", "out_starts")

    def __init__(self, out_len: int, in_len: int) -> None:
        self.out_starts = array("q")
        self.orig_starts = array("q")
        # a region's own layers (`Normalised._layers`); None: a gap (copied text)
        self.layers: list[tuple[Layer | RegionLayer, ...] | None] = []
        self.out_len = out_len
        self.in_len = in_len

    def add(
        self, out_start: int, orig_start: int, layers: tuple[Layer | RegionLayer, ...] | None
    ) -> None:
        self.out_starts.append(out_start)
        self.orig_starts.append(orig_start)
        self.layers.append(layers)

    def _region(self, p: int) -> int:
        return max(bisect_right(self.out_starts, p) - 1, 0)

    def _bounds(self, i: int) -> tuple[int, int]:
        end = self.out_starts[i + 1] if i + 1 < len(self.out_starts) else self.out_len
        return self.out_starts[i], end

    def map_span(self, start: int, end: int) -> tuple[int, int]:
        if not self.layers:
            return start, end
        i = self._region(start)
        j = self._region(end - 1) if end > start else i
        a = self._map(i, start, end, True)
        b = self._map(j, start, end, False) if end > start else a
        return a, max(a, b)

    def _map(self, i: int, start: int, end: int, left: bool) -> int:
        lo, hi = self._bounds(i)
        base = self.orig_starts[i]
        layers = self.layers[i]
        s = min(max(start, lo), hi) - lo
        e = min(max(end, lo), hi) - lo
        if layers is not None:  # as the region's `Normalised.to_original` maps
            for layer in reversed(layers):
                s, e = layer.map_span(s, e)
        return base + (s if left else e)


_STEP_RE = re.compile(r"(\D*?)(\d+)(.*)")


def merge_steps(all_steps: list[list[str]]) -> list[str]:
    """One list of steps for several regions: counts of the same step are added up."""
    totals: dict[tuple[str, str], list] = {}
    for steps in all_steps:
        for st in steps:
            m = _STEP_RE.fullmatch(st)
            if m is None:
                totals.setdefault((st, ""), [None, st])
                continue
            key = (m.group(1), re.sub(r"(?:s|ies|y)\b", "", m.group(3)))
            n = int(m.group(2))
            slot = totals.setdefault(key, [0, st])
            slot[0] += n
            if n != 1:
                slot[1] = st  # a plural wording
    out = []
    for (head, _), (n, st) in totals.items():
        if n is None:
            out.append(st)
        else:
            m = _STEP_RE.fullmatch(st)
            out.append(f"{head}{n}{m.group(3)}" if m else st)
    return out
