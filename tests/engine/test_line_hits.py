"""The lines of a whole log worth reading are found by the patterns' line literals
(`Matcher.line_hits`): every line a pattern's own scan hits must be found, whatever the
pattern's form."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import hyperscan
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.engine import Matcher, logstream, matcher
from kb.engine.patterns import analyse
from kb.engine.shards import Hits
from kb.engine.textmap import Utf8Text
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
    assert list(m.line_hits(data)) == list(_scanned(m, data))


def test_a_lines_database_that_does_not_compile_leaves_the_scan_to_find_the_lines(
    monkeypatch, caplog
) -> None:
    def refused(_shards: object) -> None:
        raise hyperscan.error("too big")

    m = Matcher.build(SPECS, cache_dir=Path(tempfile.mkdtemp(prefix="kb-line-hits-")))
    monkeypatch.setattr(matcher, "lines_database", refused)
    data = "\n".join(PIECES).encode()
    assert list(m.line_hits(data)) == list(_scanned(m, data))
    assert "line literals not compiled" in caplog.text


def test_an_edit_is_found_by_its_own_scan_beside_the_builds_line_literals() -> None:
    m = _matcher()
    edited = m.with_changes([PatternSpec("k-new", "Replica (.+?) fell behind the leader", "")], [])
    data = b"noise\nReplica r2 fell behind the leader by 3 s\n" + PIECES[0].encode()
    found = {(pid, _line(data, e)) for pid, e, _h in edited.line_hits(data)}
    new = edited._key_pid["k-new"]
    assert (new, 1) in found  # the delta's own scan
    assert (edited._key_pid["k0"], 2) in found  # the build's line literal
    assert edited._lines is m._lines  # compiled once for both


def _scanned(m: Matcher, data: bytes) -> Hits:
    hits = Hits()
    for sh in m._shards:
        sh.scan(data, data.decode("utf-8", "replace"), hits)
    return hits


def _log(middle: list[str], lines: int = 3_000) -> str:
    noise = [
        f"2026-12-04T10:{i // 60 % 60:02d}:{i % 60:02d}Z INFO step {i} done" for i in range(lines)
    ]
    half = lines // 2
    return "\n".join([*noise[:half], *middle, *noise[half:]]) + "\n"


@pytest.mark.usefixtures("small_log")
def test_a_whole_log_given_as_bytes_is_matched_as_its_text(monkeypatch) -> None:
    m = _matcher()
    data = _log([PIECES[0], PIECES[6], PIECES[7], PIECES[9]]).encode()
    data = data[:5] + b"\xff" + data[5:]  # not UTF-8: read as U+FFFD, as the text is
    got = m.match(data)
    assert isinstance(got.normalised.original, Utf8Text)  # matched from its excerpt
    want = m.match(data.decode("utf-8", "replace"))
    assert [(a.key, a.first_line, a.match.span, a.match.text) for a in got.answers] == [
        (a.key, a.first_line, a.match.span, a.match.text) for a in want.answers
    ]
    assert {a.key for a in got.answers} >= {"k0", "k3"}  # k3: a message over two lines


@pytest.mark.usefixtures("small_log")
def test_a_dense_log_given_as_bytes_is_read_for_its_excerpt_once(monkeypatch) -> None:
    m = _matcher()
    reads: list[int] = []
    real = matcher.read_excerpt

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(matcher, "read_excerpt", counted)
    dense = "".join(f"\x1b[31mstep {i} failed\x1b[0m\r\n" for i in range(500))
    got = m.match((dense + PIECES[0] + "\n").encode())
    assert len(reads) == 1
    assert any(a.key == "k0" for a in got.answers)


def test_the_surroundings_kept_are_those_of_lines_the_scan_hits(monkeypatch) -> None:
    """Lines holding only a pattern's line literal do not use up the characters kept
    around the first matches: those go to lines the scan itself hits."""
    m = _matcher()
    monkeypatch.setattr(logstream, "AROUND_BUDGET", 4_000)
    decoys = [f"request {i} was refused by the peer" for i in range(200)]  # literal only
    path = "pool settings read from /srv/app/db/pool.toml"  # no trigger of the normaliser
    tail = ["filler"] * (logstream.TAIL_LINES + 100)  # the last lines are kept whole
    lines = [*decoys, *["filler"] * 20, path, *["filler"] * 5, PIECES[0], *tail]
    excerpt = logstream.read_excerpt(m, ["\n".join(lines).encode()], chunk_bytes=1 << 20)
    kept = excerpt.text.split("\n")
    assert kept[lines.index(path)] == path  # within AROUND_LINES of the match
    assert kept[lines.index(PIECES[0])] == PIECES[0]
