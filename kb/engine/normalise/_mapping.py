"""Offset mapping between a rewritten text and the text it was made from.

Every normalisation pass rewrites its input into an output plus one `Layer`: a table of
segments, each saying "these output characters come from that input range". A segment is
*linear* when output and input have the same length (a copy, or a 1:1 substitution): offset
``k`` inside it maps to ``input_start + k``. Otherwise (an escape sequence decoded to one
character, an inserted separator) the whole output segment maps to the whole input range.

Deleted input (ANSI codes, fence markers) simply has no segment. Segments are kept in three
`array('q')` columns and found by bisection, so a whole log with a million edits costs a
few machine words per edit, not a Python object per character.
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

    def _segment(self, start: int, end: int, linear: bool) -> None:
        """Map the next output characters to input ``[start, end)``; a linear segment
        that continues the previous linear one extends it instead."""
        if linear and self._last_linear and self.oe[-1] == start:
            self.oe[-1] = end
            return
        self.ns.append(self.pos)
        self.os.append(start)
        self.oe.append(end)
        self._last_linear = linear
        self._all_linear = self._all_linear and linear

    def copy(self, s: str, start: int, end: int) -> None:
        """Append ``s[start:end]`` unchanged (a linear segment)."""
        if end <= start:
            return
        self._segment(start, end, True)
        self.out.append(s[start:end])
        self.pos += end - start

    def emit(self, text: str, start: int, end: int) -> None:
        """Append ``text`` standing for input ``[start, end)``.

        Same length means a 1:1 substitution (linear); otherwise every output character of
        ``text`` maps to the whole input range.
        """
        if not text:
            return
        self._segment(start, end, len(text) == end - start)
        self.out.append(text)
        self.pos += len(text)

    def finish(self, in_len: int) -> tuple[str, Layer]:
        text = "".join(self.out)
        return text, Layer(
            self.ns, self.os, None if self._all_linear else self.oe, len(text), in_len
        )


CHUNK = 1 << 20  # deletion passes work a megabyte at a time to bound temporary objects


def deletion_layer(src: str, pattern, lead: str | None = None) -> tuple[str, Layer | None, int]:
    """Delete every match of compiled ``pattern`` (no capture groups) from ``src``.

    Returns (new text, layer or None, number of deletions). Runs at C speed: `split` gives the
    kept pieces, and `findall` -- or, when every match starts at a ``lead`` character (ANSI
    codes start at ESC), `str.split(lead)` -- gives where they were; `itertools.accumulate`
    turns the lengths into the segment table. Large texts are processed in chunks cut after a
    newline (no pattern used here spans a line end), so the temporary piece lists stay
    small: a whole log full of ANSI codes costs the output and three int arrays.
    """
    from itertools import repeat
    from operator import add

    n_src = len(src)
    bounds = []
    a = 0
    while a < n_src:
        b = min(a + CHUNK, n_src)
        if b < n_src:
            nl = src.find("\n", b)
            b = n_src if nl < 0 else nl + 1
        bounds.append((a, b))
        a = b
    outs: list[str] = []
    ns = array("q")
    os = array("q")
    total = 0
    out_pos = 0
    for a, b in bounds:
        piece = src if (a, b) == (0, n_src) else src[a:b]
        r = _delete_chunk(piece, pattern, lead)
        if r is None:
            ns.append(out_pos)
            os.append(a)
            outs.append(piece)
            out_pos += len(piece)
            continue
        cout, cns, cos, n = r
        ns.extend(map(add, cns, repeat(out_pos)))
        os.extend(map(add, cos, repeat(a)))
        outs.append(cout)
        out_pos += len(cout)
        total += n
    if not total:
        return src, None, 0
    out = "".join(outs)
    return out, Layer(ns, os, None, len(out), n_src), total


def _delete_chunk(src: str, pattern, lead: str | None) -> tuple[str, array, array, int] | None:
    from itertools import accumulate, count, islice
    from operator import add, sub

    kept = pattern.split(src)
    n = len(kept) - 1
    if n == 0:
        return None
    kept_lens = array("q", map(len, kept))
    ns = array("q", [0])
    ns.extend(accumulate(islice(kept_lens, n)))
    os = array("q", [0])
    if lead is not None and src.count(lead) == n:
        # start of the i-th match = characters before it + i lead characters
        pieces = src.split(lead)
        starts = array("q", map(add, accumulate(map(len, islice(pieces, n))), count()))
        del pieces
        os.extend(map(sub, islice(starts, 1, n), islice(kept_lens, 1, n)))
        os.append(len(src) - kept_lens[n])
    else:
        drop_lens = array("q", map(len, pattern.findall(src)))
        os.extend(accumulate(map(add, kept_lens, drop_lens)))
    return "".join(kept), ns, os, n
