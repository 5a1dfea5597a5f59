"""A whole log read in blocks: matched in bounded memory, with the answer of reading it whole.

Why blocks of lines and an excerpt, not Hyperscan's stream mode: stream mode would carry
the scan across block boundaries, but nothing after the scan streams that way. The
normaliser joins wrapped messages and reads stack traces over several lines (inserting
variant lines after them), confirming reads a window of lines around each hit, the
evidence and the root-cause order read the frames, paths and markers around matches: all
need the *lines* around a hit, on both sides of any boundary. So the log is read in blocks
of whole lines, each block preceded by the previous block's last lines (`PENDING_LINES`,
far more than the normaliser's longest region: a trigger's line, one before it and
`AFTER_LINES` after it), and from each block only the lines that can change the answer are
kept, verbatim:

* the normaliser's regions (`log_windows`: every trigger of a whole log with its context,
  so wrapped runs, tracebacks, panics, JSON and error-level lines and the envelopes around
  them are normalised exactly as when the log is read whole);
* every line where a pattern's match may end, as pasted: one holding the pattern's line
  literal, a plain string each of its matches holds on that line (`Matcher.line_hits`:
  Hyperscan finds those strings several times faster than it runs the scan forms, for a
  few more lines kept), with the lines confirming a hit there reads
  (`Matcher.window_lines`: as many as the pattern has newlines below, and the one below,
  read for a trace that starts there; above, a few, where a relaxed match of a wrapped
  message may start, up to the farthest that can start it: one holding the pattern's
  first word, or a character other than ASCII, whose case folding the search reads); the
  first of them that the scan itself hits, `AROUND_LINES` either side, for
  `AROUND_BUDGET` characters (where the evidence reads paths and module names, within its
  own budget);
* every chained-exception marker (``Caused by``, Python's "above exception"),
  `AFTER_LINES` either side (the root-cause order walks the chain from them);
* the last `TAIL_LINES` lines (where, with no confident match, similar messages are
  looked for).

Every other line becomes an empty line, so the excerpt has the log's line numbers, and a
table maps its offsets to the log's. The excerpt is matched as the whole log would be
(`Matcher.match` of the `Excerpt`: its regions are planned, and judged dense, against the
log's size), and the matches' spans are mapped back. Memory: one block, the lines pending
for the next one, and the excerpt (a log with an error line in 100 keeps under a tenth of
its bytes), gathered as UTF-8 in one buffer: its bytes are what the match plans from and
normalises, never encoded again, and what reads its text after the scan reads those bytes
(`normalise_excerpt`, `Utf8Text`): the text is never decoded whole, and no piece of it is
a string of its own.

Limit: a log whose normaliser triggers are dense (a CR or an ANSI colour on most lines) is
normalised in one go when read whole; its excerpt is not, and keeps most of the log. Given
as text, such a log is matched whole (`Matcher.match` checks `Excerpt.dense`); read in
blocks, the report says so (`DENSE_NOTE`).
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_right
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .candidates import WINDOW_EXTRA_LINES
from .evidence import AROUND_LINES, MAX_AROUND_CHARS, FactsOf
from .normalise._prefilter import chain_marker_ends
from .normalise._regions import AFTER_LINES, log_windows
from .normalise._structure import BIG_TEXT as WHOLE_LOG_CHARS
from .releases import ReleasesOf
from .suggest import MAX_SCAN_LINES
from .types import Match, MatchReport

if TYPE_CHECKING:
    from .matcher import Matcher

CHUNK_BYTES = 8 * 1024 * 1024  # bytes of new lines per block
AROUND_BUDGET = 8 * MAX_AROUND_CHARS  # characters kept for the evidence around the first
# hits: more than it reads, since some hits are not confident matches
TAIL_LINES = MAX_SCAN_LINES + 4 * WINDOW_EXTRA_LINES  # the similarity fallback's lines
PENDING_LINES = max(4 * AFTER_LINES, TAIL_LINES)  # a block's last lines, read again with
# the next block: a region, a hit's window or a marker's chain cut by the block's end is
# seen whole there, and at the end they are the log's tail
DENSE_NOTE = (
    "the log was read in blocks and most of its lines need normalising (a CR or a colour "
    "code on most lines): it was normalised around its errors only"
)


@dataclass(slots=True)
class Excerpt:
    """The lines of a log that matter, every other line empty; offsets map both ways."""

    # the excerpt in UTF-8 (as read; a log's bytes that are not UTF-8 are replaced, as
    # when read whole): the match takes it (`take_encoded`) and reads its text from it
    # (`normalise_excerpt`)
    encoded: bytes | None
    length: int  # characters of the excerpt
    size: int  # bytes of the log
    chars: int  # characters of the log (decoded as UTF-8, errors replaced)
    outs: array  # excerpt offset where each run starts
    origs: array  # the log's offset of that start
    kept: bytearray  # 1: the run is the log's text; 0: its lines, left empty
    _windows: list[list[int]] | None = None  # `log_windows` of the excerpt, once planned
    _dense: bool | None = None

    def to_original(self, pos: int) -> int:
        i = max(bisect_right(self.outs, pos) - 1, 0)
        return self.origs[i] + (pos - self.outs[i] if self.kept[i] else 0)

    def to_excerpt(self, pos: int) -> int:
        i = max(bisect_right(self.origs, pos) - 1, 0)
        return self.outs[i] + (pos - self.origs[i] if self.kept[i] else 0)

    def dense(self) -> bool:
        """Whether the log's normaliser triggers are dense (the limit in the module doc):
        read whole, it would be normalised in one go, not by regions. The excerpt holds
        every trigger and region of the log, so it answers for the log."""
        if self._dense is None:
            assert self.encoded is not None, "planned before the match takes the bytes"
            self._windows = log_windows(self.encoded, self.size)
            self._dense = self._windows is None
        return self._dense

    def windows(self) -> list[list[int]] | None:
        """The excerpt's regions, planned against the log's size (None: dense)."""
        self.dense()
        return self._windows

    @property
    def text(self) -> str:
        """The excerpt's text (decoded from `encoded`: read it before the match takes it)."""
        assert self.encoded is not None, "the match took the excerpt's bytes"
        return self.encoded.decode("utf-8")

    def take_encoded(self) -> bytes:
        """`encoded`, no longer held here (nor its regions: `windows` first): whoever takes
        it can let it go when done."""
        data, self.encoded, self._windows = self.encoded, None, None
        assert data is not None, "an excerpt is matched once"
        return data


def _breaks(run: bytes) -> int:
    """Line ends in ``run`` as `Normalised.line_of` counts them (CRLF, CR, LF)."""
    n = run.count(b"\n")
    return n + run.count(b"\r") - run.count(b"\r\n") if b"\r" in run else n


class _Reader:
    """Blocks of lines in, the excerpt out (see the module doc)."""

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.buf = bytearray()  # the excerpt in UTF-8: one buffer
        self.outs = array("q")
        self.origs = array("q")
        self.kept = bytearray()
        self.out = 0  # excerpt characters written
        self.orig = 0  # log characters written
        self.size = 0
        self.around = AROUND_BUDGET
        # pattern id -> its confirm window (`Matcher.window_lines`)
        self.windows: dict[int, tuple[int, int, bytes | None]] = {}
        self.pending = b""  # lines read but not written (the next block starts with them)
        self.pending_keep: list[tuple[int, int]] = []  # their kept byte ranges
        self.utf8 = True  # whether every kept run was valid UTF-8

    def block(self, new: bytes, final: bool) -> None:
        data = self.pending + new if self.pending else new
        self.size += len(new)
        if not data:
            return
        n = len(data)
        keep = self.pending_keep + self._wanted(data)
        if final:
            keep.append((_line_start(data, n - 1, TAIL_LINES - 1), n))
            cut = n
        else:
            cut = _line_start(data, n - 1, PENDING_LINES - 1)
        spans = _merged(keep, n)
        self._write(data, [(a, min(b, cut)) for a, b in spans if a < cut], cut)
        self.pending = data[cut:]
        self.pending_keep = [(max(a, cut) - cut, b - cut) for a, b in spans if b > cut]

    def _wanted(self, data: bytes) -> list[tuple[int, int]]:
        """[start, end) byte ranges of whole lines of ``data`` to keep (the module doc)."""
        n = len(data)
        out = [(bs, min(be + 1, n)) for bs, be in log_windows(data, None) or ()]
        hits = self.matcher.line_hits(data)
        by_end = sorted(zip(hits.ends, hits.pids, strict=True))
        del hits
        line_end = -1
        pids: list[int] = []
        pos = 0
        for e, pid in by_end:
            at = max(e - 1, 0)
            if at >= line_end:  # a new line: the last one's range first
                if line_end >= 0:
                    out.append(self._hit_range(data, pos, pids))
                pos, line_end = at, _line_end(data, at, 0)
                pids = []
            pids.append(pid)
        if line_end >= 0:
            out.append(self._hit_range(data, pos, pids))
        for end in chain_marker_ends(data):  # a byte of the marker: its line's
            pos = end - 1
            out.append((_line_start(data, pos, AFTER_LINES), _line_end(data, pos, AFTER_LINES)))
        return out

    def _window(self, pid: int) -> tuple[int, int, bytes | None]:
        got = self.windows.get(pid)
        if got is None:
            got = self.windows[pid] = self.matcher.window_lines(pid)
        return got

    def _hit_range(self, data: bytes, pos: int, pids: list[int]) -> tuple[int, int]:
        """The lines kept for the line holding byte ``pos``, hit by patterns ``pids``: the
        confirm windows (the module doc); the first ones' surroundings while
        `AROUND_BUDGET` lasts."""
        above, below = 0, 1
        starts: list[int] = []  # starts of the hit line and of the lines above it
        for pid in set(pids):
            up, down, word = self._window(pid)
            below = max(below, down)
            if word is None:
                above = max(above, up)
                continue
            if up > len(starts) - 1:
                starts = _starts_above(data, pos, up)
            for k in range(min(up, len(starts) - 1), above, -1):
                line = data[starts[k] : starts[k - 1]]
                if not line.isascii() or word in line.lower():
                    above = k
                    break
        around = self.around > 0 and self.matcher.scan_hits(
            data[_line_start(data, pos, 0) : _line_end(data, pos, 0)], pids
        )  # around a line the scan hits (where matches are), not a line literal's other lines
        if around:
            above, below = max(above, AROUND_LINES), max(below, AROUND_LINES)
        a = _line_start(data, pos, above)
        b = _line_end(data, pos, below)
        if around:
            self.around -= b - a
        return a, b

    def _write(self, data: bytes, spans: list[tuple[int, int]], cut: int) -> None:
        """``data`` up to ``cut``: the kept ``spans`` as they are, the other lines empty."""
        pos = 0  # byte offset written up to
        for a, b in spans:
            if a > pos:
                self._run(data[pos:a], False)
            self._run(data[a:b], True)
            pos = b
        if cut > pos:
            self._run(data[pos:cut], False)

    def _run(self, run: bytes, kept: bool) -> None:
        self.outs.append(self.out)
        self.origs.append(self.orig)
        self.kept.append(kept)
        if run.isascii():
            chars = len(run)
        elif not kept:
            chars = len(run.decode("utf-8", "replace"))
        else:
            try:
                chars = len(run.decode("utf-8"))
            except UnicodeDecodeError:
                self.utf8 = False
                chars = len(run.decode("utf-8", "replace"))
        if kept:  # whole lines: decoded alone or joined, a run reads the same
            self.buf += run
            self.out += chars
        else:
            breaks = _breaks(run)
            self.buf += b"\n" * breaks
            self.out += breaks
        self.orig += chars

    def excerpt(self) -> Excerpt:
        data = bytes(self.buf)
        self.buf = bytearray()
        if not self.utf8:  # bytes that are not UTF-8: replaced, as when read whole
            data = data.decode("utf-8", "replace").encode("utf-8")
        return Excerpt(data, self.out, self.size, self.orig, self.outs, self.origs, self.kept)


def _merged(spans: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """[start, end) ranges clipped to ``n`` bytes, sorted, touching ones merged."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        a, b = max(a, 0), min(b, n)
        if a >= b:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _line_start(data: bytes, pos: int, up: int) -> int:
    """Where the line ``up`` lines above the one holding byte ``pos`` starts."""
    return _starts_above(data, pos, up)[-1]


def _starts_above(data: bytes, pos: int, up: int) -> list[int]:
    """Starts of the line holding byte ``pos`` and of the ``up`` lines above it (fewer at
    the start of ``data``), nearest first."""
    start = data.rfind(b"\n", 0, pos) + 1
    out = [start]
    while len(out) <= up and start > 0:
        start = data.rfind(b"\n", 0, start - 1) + 1
        out.append(start)
    return out


def _line_end(data: bytes, pos: int, down: int) -> int:
    """Where the line ``down`` lines below the one holding byte ``pos`` ends (after its
    "\\n")."""
    end = data.find(b"\n", pos)
    for _ in range(down):
        if end < 0:
            break
        end = data.find(b"\n", end + 1)
    return len(data) if end < 0 else end + 1


def is_whole_log(head: bytes) -> bool:
    """Whether a log starting with ``head`` is a whole log to the normaliser (more than
    `WHOLE_LOG_CHARS` characters: normalised by regions), which an excerpt reproduces; a
    smaller text is normalised as a paste and is read whole."""
    n = WHOLE_LOG_CHARS
    return len(head) > n and len(head.decode("utf-8", "replace")) > n


def lines_in_blocks(blocks: Iterable[bytes], chunk_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """(whole lines of about ``chunk_bytes``, is it the last) from blocks of any size."""
    parts: list[bytes] = []
    size = 0
    for b in blocks:
        parts.append(b)
        size += len(b)
        if size >= chunk_bytes:
            data = b"".join(parts)
            cut = data.rfind(b"\n") + 1
            if cut > 0:
                parts = [data[cut:]]
                size = len(parts[0])
                yield data[:cut], False
            else:
                parts = [data]
    yield b"".join(parts), True


def read_excerpt(
    matcher: Matcher, blocks: Iterable[bytes], *, chunk_bytes: int = CHUNK_BYTES
) -> Excerpt:
    """The excerpt of the log whose bytes ``blocks`` yield (see the module doc)."""
    reader = _Reader(matcher)
    for data, final in lines_in_blocks(blocks, chunk_bytes):
        reader.block(data, final)
    return reader.excerpt()


def match_excerpt(
    matcher: Matcher,
    excerpt: Excerpt,
    *,
    facts: FactsOf | None = None,
    repos: Collection[str] = (),
    releases: ReleasesOf | None = None,
    started: float | None = None,
) -> MatchReport:
    """`Matcher.match` of the whole log ``excerpt`` was read from: the excerpt matched as
    that log, spans mapped back to the log's offsets."""
    t0 = time.perf_counter() if started is None else started
    dense = excerpt.dense()  # before the match takes the excerpt's bytes
    report = matcher.match(excerpt, facts=facts, repos=repos, releases=releases)
    if dense:
        report.notes.append(DENSE_NOTE)
    moved: dict[int, Match] = {}

    def back(m: Match) -> Match:
        got = moved.get(id(m))
        if got is None:
            s, e = m.span
            got = moved[id(m)] = replace(m, span=(excerpt.to_original(s), excerpt.to_original(e)))
        return got

    report.matches = [back(m) for m in report.matches]
    report.answers = [replace(a, match=back(a.match)) for a in report.answers]
    report.elapsed_ms = (time.perf_counter() - t0) * 1000
    return report
