"""Offset mapping between a rewritten text and the text it was made from.

Every normalisation pass rewrites its input into an output plus one `Layer`: a table of
segments, each saying "these output characters come from that input range". A segment is
*linear* when output and input have the same length (a copy, or a 1:1 substitution): offset
``k`` inside it maps to ``input_start + k``. Otherwise (an escape sequence decoded to one
character, an inserted separator) the whole output segment maps to the whole input range.

Deleted input (ANSI codes, fence markers) simply has no segment. Segments are kept in three
`array('q')` columns and found by bisection, so a 50 MB log with a million edits costs tens
of MB, not a Python object per character.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right


class Layer:
    """Maps offsets of one pass's output back to that pass's input."""

    __slots__ = ("_linear", "in_len", "ns", "oe", "os", "out_len")

    def __init__(
        self,
        ns: array,
        os: array,
        oe: array | None,
        out_len: int,
        in_len: int,
    ) -> None:
        self.ns = ns  # output start of each segment (non-decreasing)
        self.os = os  # input start of each segment
        self.oe = oe  # input end of each segment; None when every segment is linear
        self.out_len = out_len
        self.in_len = in_len

    def __len__(self) -> int:
        return len(self.ns)

    def _seg(self, i: int) -> tuple[int, int, int, bool]:
        ns = self.ns[i]
        n_end = self.ns[i + 1] if i + 1 < len(self.ns) else self.out_len
        os = self.os[i]
        if self.oe is None:
            return ns, os, os + (n_end - ns), True
        oe = self.oe[i]
        return ns, os, oe, (oe - os) == (n_end - ns)

    def _start(self, p: int) -> int:
        """Input start for an output span starting at ``p`` < out_len."""
        if not self.ns:
            return min(p, self.in_len)
        i = max(bisect_right(self.ns, p) - 1, 0)
        ns, os, oe, linear = self._seg(i)
        return min(os + (p - ns), oe) if linear else os

    def _end(self, p: int) -> int:
        """Input end for an output span ending (exclusively) at ``p`` > 0."""
        if not self.ns:
            return min(p, self.in_len)
        c = p - 1
        i = max(bisect_right(self.ns, c) - 1, 0)
        ns, os, oe, linear = self._seg(i)
        if linear:
            return min(os + (c - ns) + 1, oe)
        return oe

    def map_span(self, start: int, end: int) -> tuple[int, int]:
        start = min(max(start, 0), self.out_len)
        end = min(max(end, start), self.out_len)
        if end == start:
            p = self._point(start)
            return p, p
        a = self._start(start)
        b = self._end(end)
        return a, max(a, b)

    def _point(self, p: int) -> int:
        if not self.ns:
            return min(p, self.in_len)
        if p >= self.out_len:
            # just after the last output character
            return self._end(p) if p > 0 else 0
        i = max(bisect_right(self.ns, p) - 1, 0)
        ns, os, oe, linear = self._seg(i)
        if linear:
            return min(os + (p - ns), oe)
        return os


class Builder:
    """Accumulates output text and the segment table that maps it to the input."""

    __slots__ = ("_all_linear", "_last_linear", "ns", "oe", "os", "out", "pos")

    def __init__(self) -> None:
        self.out: list[str] = []
        self.ns = array("q")
        self.os = array("q")
        self.oe = array("q")
        self.pos = 0
        self._last_linear = False
        self._all_linear = True

    def copy(self, s: str, start: int, end: int) -> None:
        """Append ``s[start:end]`` unchanged (a linear segment)."""
        if end <= start:
            return
        if self._last_linear and self.oe[-1] == start:
            self.oe[-1] = end
        else:
            self.ns.append(self.pos)
            self.os.append(start)
            self.oe.append(end)
            self._last_linear = True
        self.out.append(s[start:end])
        self.pos += end - start

    def emit(self, text: str, start: int, end: int) -> None:
        """Append ``text`` standing for input ``[start, end)``.

        Same length means a 1:1 substitution (linear); otherwise every output character of
        ``text`` maps to the whole input range.
        """
        if not text:
            return
        if len(text) == end - start:
            if self._last_linear and self.oe[-1] == start:
                self.oe[-1] = end
            else:
                self.ns.append(self.pos)
                self.os.append(start)
                self.oe.append(end)
                self._last_linear = True
        else:
            self.ns.append(self.pos)
            self.os.append(start)
            self.oe.append(end)
            self._last_linear = False
            self._all_linear = False
        self.out.append(text)
        self.pos += len(text)

    def finish(self, in_len: int) -> tuple[str, Layer]:
        text = "".join(self.out)
        return text, Layer(
            self.ns, self.os, None if self._all_linear else self.oe, len(text), in_len
        )


def deletion_layer(src: str, pattern) -> tuple[str, Layer | None, int]:
    """Delete every match of compiled ``pattern`` (no capture groups) from ``src``.

    Runs at C speed: `split` and `findall` give the kept pieces and the deleted ones, and
    `itertools.accumulate` turns their lengths into the segment table.
    """
    from itertools import accumulate
    from operator import add

    kept = pattern.split(src)
    if len(kept) == 1:
        return src, None, 0
    dropped = pattern.findall(src)
    kept_lens = array("q", map(len, kept))
    drop_lens = array("q", map(len, dropped))
    ns = array("q", [0])
    ns.extend(accumulate(kept_lens[:-1]))
    os = array("q", [0])
    os.extend(accumulate(map(add, kept_lens, drop_lens)))
    out = "".join(kept)
    return out, Layer(ns, os, None, len(out), len(src)), len(dropped)
