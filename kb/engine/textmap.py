"""Offsets and lines: the glue between the byte-oriented scan and the str world.

Hyperscan reports end offsets in the UTF-8 bytes of the normalised text. Confirming,
ranking and reporting work on `str` offsets and on lines. This module converts, in one
forward pass over sorted hits, without ever decoding more than once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class HitLine:
    """One line of the normalised text where at least one pattern hit."""

    number: int  # 0-based line number in the normalised text
    cstart: int  # str offset of the line start
    cend: int  # str offset of the line end (the '\n' or len)


def locate_lines(data: bytes, text: str, offsets: list[int]) -> dict[int, HitLine]:
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
            cpos_c += len(data[cpos_b:bstart].decode("utf-8", "replace"))
            cpos_b = bstart
            cstart = cpos_c
            cend = cstart + len(data[bstart:bend].decode("utf-8", "replace"))
        line = HitLine(line_no, cstart, cend)
        out[e] = line
    return out


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
