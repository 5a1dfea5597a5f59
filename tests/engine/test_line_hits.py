"""The lines of a whole log worth reading are found by the patterns' line literals
(`Matcher.line_hits`): every line a pattern's own scan hits must be found, whatever the
pattern's form."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.engine import Matcher, matcher
from kb.engine.patterns import analyse
from kb.engine.shards import Hits
from kb.engine.types import PatternSpec

PATTERNS = [
    "Connection to (.+?) was refused by the peer",
    "Failed  to open   file (.+?) for writing",  # several spaces: relaxed in the scan
    # long: it has a head, which catches a paste cut off before the end
    "Source ID is required for schema history\\. Please provide a unique source ID to "
    "avoid path conflicts between multiple sources (.+?)",
    "Task (.+?) failed while committing offsets\ncaused by: (.+?) timed out",  # two lines
    "ab (.+?) cd (.+?) ef (.+?) gh (.+?) ij (.+?) kl",  # no literal long enough: by its scan
    r"^E[0-9]{3}: disk [a-z]+ is (full|gone)$",  # opaque
    "connection",  # generic
]
SPECS = [PatternSpec(f"k{i}", p, p) for i, p in enumerate(PATTERNS)]
PIECES = [
    "Connection to db-1:5432 was refused by the peer",
    "Connection to db-1:5432 was",
    "Failed to open file /tmp/x for writing",
    "Failed  to open   file /tmp/x for writing",
    "Source ID is required for schema history. Please provide a unique source ID to avoid",
    "Source ID is required for schema history. Please provide a unique source ID to avoid "
    "path conflicts between multiple sources s1",
    "Task t-7 failed while committing offsets",
    "caused by: broker 3 timed out",
    "ab 1 cd 2 ef 3 gh 4 ij 5 kl",
    "E404: disk sda is full",
    "a connection was reset",
    "2026-12-04T10:00:00Z INFO fetching metadata",
    "",
]


@cache
def _matcher() -> Matcher:
    return Matcher.build(SPECS, cache_dir=Path(tempfile.mkdtemp(prefix="kb-line-hits-")))


def _line(data: bytes, end: int) -> int:
    return data.count(b"\n", 0, max(end - 1, 0))


def test_a_line_literal_is_a_run_of_single_spaced_words_every_match_holds() -> None:
    assert analyse(PATTERNS[0]).line_literal() == b"was refused by the peer"
    assert analyse(PATTERNS[0]).line_literal() in PIECES[0].encode()
    # several spaces: a match may cross lines, so the literal may be on another line
    assert analyse(PATTERNS[1]).line_literal() is None
    assert analyse(PATTERNS[3]).line_literal() is None  # two lines
    head = analyse(PATTERNS[2])
    assert head.head_form() is not None
    literal = head.line_literal()
    assert literal is not None
    assert literal in PIECES[4].encode()
    assert analyse(PATTERNS[4]).template
    assert not analyse(PATTERNS[4]).generic
    assert analyse(PATTERNS[4]).line_literal() is None  # every run is too short
    assert analyse(PATTERNS[5]).line_literal() is None  # opaque
    assert analyse(PATTERNS[6]).line_literal() is None  # generic


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40))
def test_every_line_a_scan_hits_is_found_by_the_line_hits(pieces: list[str]) -> None:
    """Each line a pattern's scan hits is a line hit of that pattern (the lines kept
    around it are planned from there, `Matcher.window_lines`)."""
    m = _matcher()
    data = "\n".join(pieces).encode()
    scanned = Hits()
    for sh in m._shards:
        sh.scan(data, data.decode(), scanned)
    found: dict[int, set[int]] = {}
    for pid, end, _head in m.line_hits(data):
        found.setdefault(pid, set()).add(_line(data, end))
    for pid, end, _head in scanned:
        assert _line(data, end) in found.get(pid, set()), (m._patterns[pid], end)


def test_past_the_pattern_limit_the_scan_itself_finds_the_lines(monkeypatch) -> None:
    m = Matcher.build(SPECS, cache_dir=Path(tempfile.mkdtemp(prefix="kb-line-hits-")))
    monkeypatch.setattr(matcher, "LINES_DATABASE_MAX_PATTERNS", len(PATTERNS) - 1)
    data = "\n".join(PIECES).encode()
    scanned = Hits()
    for sh in m._shards:
        sh.scan(data, "", scanned)
    assert list(m.line_hits(data)) == list(scanned)
    assert m._lines == (None,)
