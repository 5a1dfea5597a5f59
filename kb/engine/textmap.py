"""Offsets and lines: the glue between the byte-oriented scan and the str world.

Hyperscan reports end offsets in the UTF-8 bytes of the normalised text. Confirming,
ranking and reporting work on `str` offsets and on lines. This module converts, in one
forward pass over sorted hits, without ever decoding more than once.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class HitLine:
    """One line of the normalised text where at least one pattern hit."""

    number: int  # 0-based line number in the normalised text
    cstart: int  # str offset of the line start
    cend: int  # str offset of the line end (the '\n' or len)


def locate_lines(data: bytes | bytearray, text: str, offsets: Iterable[int]) -> dict[int, HitLine]:
    """Map sorted-or-not byte end offsets to the lines that contain them.

    An end offset `e` means the match's last byte is `e - 1`; the line is that byte's
    line. Returns {byte_offset: HitLine}. Cost: one pass over `data` in C (count/find)
    plus Python work per distinct offset.
    """
    ascii_text = len(data) == len(text)
    out: dict[int, HitLine] = {}
    line_no = 0
    bpos = 0  # byte position where line_no's counting stopped
    cpos_b = 0  # byte offset of the last line start converted to chars
    cpos_c = 0  # the same position in chars
    line: HitLine | None = None
    bend = -1
    for e in sorted(set(offsets)):
        last = max(e - 1, 0)
        if line is not None and last < bend:  # same line as the previous hit: no work
            out[e] = line
            continue
        line_no += data.count(b"\n", bpos, last)
        bpos = last
        bstart = data.rfind(b"\n", 0, last) + 1
        bend = data.find(b"\n", last)
        if bend < 0:
            bend = len(data)
        if ascii_text:
            cstart, cend = bstart, bend
        else:
            cpos_c += utf8_chars(data, cpos_b, bstart)
            cpos_b = bstart
            cstart = cpos_c
            cend = cstart + utf8_chars(data, bstart, bend)
        line = HitLine(line_no, cstart, cend)
        out[e] = line
    return out


_CONTINUATION = bytes(range(0x80, 0xC0))  # bytes that continue a UTF-8 character
_PIECE = 1 << 20


def utf8_chars(data: bytes | bytearray, start: int, end: int) -> int:
    """Characters of ``data[start:end]``, valid UTF-8 between character starts: its bytes
    less those that continue a character, counted a piece at a time (no decoded copy of
    a whole log's stretch between two hits)."""
    if end - start <= _PIECE:  # the usual stretch: one piece
        piece = data[start:end]
        return len(piece) if piece.isascii() else len(piece.translate(None, _CONTINUATION))
    n = 0
    for at in range(start, end, _PIECE):
        piece = data[at : min(at + _PIECE, end)]
        n += len(piece) if piece.isascii() else len(piece.translate(None, _CONTINUATION))
    return n


def window_start(text: str, cstart: int, extra_lines: int, max_chars: int) -> int:
    """Start of the line `extra_lines` above the line starting at `cstart` (bounded)."""
    pos = cstart
    floor = max(0, cstart - max_chars)
    for _ in range(extra_lines):
        if pos <= floor:
            break
        prev = text.rfind("\n", floor, pos - 1)
        pos = floor if prev < 0 else prev + 1
    return max(pos, floor)


_BLOCK = 4096  # bytes of a block of `Utf8Text`'s index (cut at a character's start)


class Utf8Text:
    """A text held as its UTF-8 bytes and read by character offsets, as a `str` is read:
    ``len``, slices, ``find``, ``rfind``, ``count``, ``in``, ``str()``.

    A whole log's excerpt is mostly ASCII, but one character past U+00FF makes a `str`
    of it two bytes a character (four past U+FFFF): held as UTF-8 it is half that or less,
    and what reads it after the match (the matched lines, their numbers) reads a little
    of it. An index of blocks (each block's first character and byte, and whether it is
    ASCII, where the two offsets move together) maps the offsets; a block that is not
    ASCII is decoded when an offset falls in it.
    """

    __slots__ = ("_ascii", "_bytes", "_chars", "_len", "data")

    def __init__(self, data: bytes) -> None:
        """``data``: valid UTF-8."""
        self.data = data
        self._bytes = array("q")
        self._chars = array("q")
        self._ascii = bytearray()
        n = len(data)
        pos = chars = 0
        while pos < n:
            end = min(pos + _BLOCK, n)
            while end < n and data[end] & 0xC0 == 0x80:  # inside a character: its end
                end += 1
            block = data[pos:end]
            self._bytes.append(pos)
            self._chars.append(chars)
            ascii_ = block.isascii()
            self._ascii.append(ascii_)
            chars += len(block) if ascii_ else len(block.decode("utf-8"))
            pos = end
        self._len = chars

    def __len__(self) -> int:
        return self._len

    def __str__(self) -> str:
        return self.data.decode("utf-8")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Utf8Text):
            return self.data == other.data
        if isinstance(other, str):
            return len(other) == self._len and str(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment] # compared by value, not hashed

    def __contains__(self, sub: str) -> bool:
        return sub.encode("utf-8", "surrogatepass") in self.data

    def __getitem__(self, key: slice) -> str:
        start, stop, step = key.indices(self._len)
        if step != 1:
            raise ValueError("a slice of a Utf8Text has a step of 1")
        a = self._byte(start)
        return self.data[a : max(a, self._byte(stop))].decode("utf-8")

    def find(self, sub: str, start: int | None = None, end: int | None = None) -> int:
        return self._search(self.data.find, sub, start, end, 0)

    def rfind(self, sub: str, start: int | None = None, end: int | None = None) -> int:
        return self._search(self.data.rfind, sub, start, end, 1)

    def _search(
        self,
        search: Callable[[bytes, int, int], int],
        sub: str,
        start: int | None,
        end: int | None,
        side: int,
    ) -> int:
        """``search`` (bytes' find or rfind) by character offsets; an empty ``sub`` is
        found at the start (``side`` 0) or the end (1) of the range, as `str` finds it."""
        if not sub:
            got = self._empty(start, end)
            return -1 if got is None else got[side]
        a, b = self._range(start, end)
        i = search(sub.encode("utf-8", "surrogatepass"), a, b)
        return -1 if i < 0 else self._char(i)

    def count(self, sub: str, start: int | None = None, end: int | None = None) -> int:
        if not sub:
            got = self._empty(start, end)
            return 0 if got is None else got[1] - got[0] + 1
        a, b = self._range(start, end)
        return self.data.count(sub.encode("utf-8", "surrogatepass"), a, b)

    def _empty(self, start: int | None, end: int | None) -> tuple[int, int] | None:
        """(start, end) as `str`'s searches clamp them for an empty ``sub``; None where
        they find nothing (a start past the end)."""
        n = self._len
        s = 0 if start is None else max(start + n, 0) if start < 0 else start
        e = n if end is None else max(end + n, 0) if end < 0 else min(end, n)
        return None if s > n or s > e else (s, e)

    def byte_offset(self, c: int) -> int:
        """The byte offset of character ``c`` (clamped to the text)."""
        return self._byte(min(max(c, 0), self._len))

    def _range(self, start: int | None, end: int | None) -> tuple[int, int]:
        s, e, _ = slice(start, end).indices(self._len)
        return self._byte(s), self._byte(max(s, e))

    def _byte(self, c: int) -> int:
        """The byte offset of character ``c`` (0 <= c <= len)."""
        if c >= self._len:
            return len(self.data)
        i = bisect_right(self._chars, c) - 1
        at, k = self._bytes[i], c - self._chars[i]
        if self._ascii[i]:
            return at + k
        end = self._bytes[i + 1] if i + 1 < len(self._bytes) else len(self.data)
        return at + len(self.data[at:end].decode("utf-8")[:k].encode("utf-8"))

    def _char(self, b: int) -> int:
        """The character offset of byte ``b``, a character's first byte (or the end)."""
        if b >= len(self.data):
            return self._len
        i = bisect_right(self._bytes, b) - 1
        at = self._bytes[i]
        if self._ascii[i]:
            return self._chars[i] + b - at
        return self._chars[i] + len(self.data[at:b].decode("utf-8"))


Text = str | Utf8Text  # a text read by character offsets (`Normalised.original`)
