"""``kb.http.gunzip_blocks``: a gzip log decompressed as a stream reads as ``gunzip`` reads
it whole, whatever its blocks, with its output bounded (a gzip bomb stops at the limit,
one part at a time) and a damaged or cut-off stream refused."""

from __future__ import annotations

import gzip
import random

import pytest

from kb.http import GUNZIP_PART, TooLarge, gunzip, gunzip_blocks


def _split(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        out.append(data[pos : pos + n])
        pos += n
        i += 1
    return out


def test_blocks_of_any_size_read_as_gunzip_reads_the_whole_file() -> None:
    rng = random.Random(4)
    text = "".join(f"line {i} {rng.random()}\n" for i in range(60_000)).encode()
    data = gzip.compress(text) + gzip.compress(b"second member\n") + b"\0\0trailing"
    whole = gunzip(data, "log", 10**8)
    assert whole == text + b"second member\n"
    for sizes in ([1, 1, 3], [7], [65_536], [len(data)]):
        blocks = _split(data, sizes) if sizes != [1, 1, 3] else [data[:1], data[1:2], data[2:]]
        assert b"".join(gunzip_blocks(blocks, "log", 10**8)) == whole
    plain = [b"not ", b"", b"gzip\n"]
    assert b"".join(gunzip_blocks(plain, "log", 100)) == b"not gzip\n"


def test_a_gzip_bomb_stops_at_the_limit_a_part_at_a_time() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB from about 64 KiB
    parts: list[int] = []

    def read() -> None:
        for part in gunzip_blocks([bomb], "log", 8 * 1024 * 1024):
            parts.append(len(part))

    with pytest.raises(TooLarge):
        read()
    assert max(parts) <= GUNZIP_PART
    assert sum(parts) <= 8 * 1024 * 1024 + 1


def test_a_damaged_or_cut_off_stream_is_refused() -> None:
    data = gzip.compress(b"x" * 100_000 + b"\n")
    with pytest.raises(ValueError, match="cut short"):
        b"".join(gunzip_blocks([data[: len(data) // 2]], "log", 10**7))
    damaged = data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:]
    with pytest.raises(ValueError, match="not valid gzip"):
        b"".join(gunzip_blocks([damaged], "log", 10**7))
