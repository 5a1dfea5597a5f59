"""A whole log read in blocks (`kb.engine.logstream`): the excerpt of the lines that matter,
matched as the log, gives the answer of matching the log read whole, wherever the blocks
end: a message wrapped across a block boundary, a stack trace cut by one, a real log of
mixed envelopes."""

from __future__ import annotations

from itertools import pairwise

import pytest

from kb.engine import Matcher, logstream
from kb.engine.logstream import DENSE_NOTE, match_excerpt, read_excerpt
from kb.engine.textmap import Utf8Text
from kb.engine.types import MatchReport
from kb.records.validation import render_message

from .conftest import needs_data
from .test_normalise_log import _mixed_log

# a record's message, hard-wrapped with its continuation indented (joined when read)
WRAPPED_ID = "a5445d51c29107bf"
WRAPPED = [
    "2026-11-30T01:00:01.000Z ERROR app::module: Source ID is required for schema history. "
    "Please provide a",
    "    unique source ID to avoid path conflicts between multiple sources.",
]


def _whole(m: Matcher, text: str) -> MatchReport:
    """``text`` matched as read whole, not from its excerpt."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(m, "excerpt_logs", False)
        return m.match(text)


def _shape(r: MatchReport) -> tuple:
    return (
        [
            (m.key, m.line, m.span, m.text, m.captures, round(m.score, 6), m.reason, m.kind,
             m.evidence, m.same_message)
            for m in r.matches
        ],
        [(a.key, a.count, a.first_line, a.last_line, a.order, a.reason, a.cause,
          a.match.span, [x.key for x in a.alternatives]) for a in r.answers],
        r.groups,
        [(s.key, s.similarity, s.reason, s.line) for s in r.suggestions],
        r.normalised.steps,
    )  # fmt: skip


def _in_blocks(m: Matcher, text: str, cuts: list[int], chunk_bytes: int) -> MatchReport:
    """``text`` read in blocks ending at the line starts ``cuts`` (and every
    ``chunk_bytes``), matched from its excerpt."""
    data = text.encode()
    bounds = [0, *cuts, len(data)]
    blocks = [data[a:b] for a, b in pairwise(bounds)]
    excerpt = read_excerpt(m, blocks, chunk_bytes=chunk_bytes)
    assert excerpt.size == len(data)
    assert excerpt.text.count("\n") == text.count("\n")  # the log's line numbers
    return match_excerpt(m, excerpt)


def _around(records: list[dict], middle: list[str], lines: int = 6_000) -> tuple[str, int]:
    """A mixed log with ``middle`` in its middle; the offset where ``middle`` starts."""
    log = _mixed_log(records, lines)
    half = log.index("\n", len(log) // 2) + 1
    text = log[:half] + "\n".join(middle) + "\n" + log[half:]
    return text, half


@needs_data
@pytest.mark.usefixtures("small_log")
def test_a_message_wrapped_across_a_block_boundary_is_matched_as_when_read_whole(
    full_matcher, records
) -> None:
    text, at = _around(records, WRAPPED)
    cut = at + len(WRAPPED[0]) + 1  # the first block ends between the two lines
    line = text.count("\n", 0, at) + 1
    whole = _whole(full_matcher, text)
    assert any(m.key == WRAPPED_ID and m.line == line for m in whole.matches)
    got = _in_blocks(full_matcher, text, [cut], cut)
    assert _shape(got) == _shape(whole)
    m = next(m for m in got.matches if m.key == WRAPPED_ID)
    assert text[m.span[0] : m.span[1]] == m.text  # spans are the log's offsets


@needs_data
@pytest.mark.usefixtures("small_log")
def test_lines_above_a_hit_are_kept_from_the_farthest_that_can_start_its_match(
    full_matcher, records, monkeypatch
) -> None:
    """A two-line message is hit on its second line and confirmed from a few lines above
    it: of those, the excerpt keeps the line holding the pattern's first word and the
    ones below it; the lines above that cannot start the match are left empty, and the
    answer is the whole log's."""
    monkeypatch.setattr(logstream, "AROUND_BUDGET", 0)  # no hit's surroundings kept
    noise = ["connected to broker 3", "fetching metadata", "refreshing cache"]
    message = [
        "Invalid order key column `ts`",
        "HINT: Only plain column names are supported in order_key",
    ]
    text, at = _around(records, [*noise, *message])
    first = text.count("\n", 0, at) + len(noise) + 1
    whole = _whole(full_matcher, text)
    assert any(m.key == "78fdb2ee6b9f7130" and m.line == first for m in whole.matches)
    excerpt = read_excerpt(full_matcher, [text.encode()], chunk_bytes=100_000)
    lines = excerpt.text.split("\n")
    assert lines[first - 1 - len(noise) : first + 1] == ["", "", "", *message]
    assert _shape(match_excerpt(full_matcher, excerpt)) == _shape(whole)


@needs_data
@pytest.mark.usefixtures("small_log")
def test_the_lines_around_a_chained_exception_marker_are_kept(
    full_matcher, records, monkeypatch
) -> None:
    """A "Caused by" behind a prefix no envelope knows: the lines around it are kept (the
    root-cause order reads the chain from it), a frame no hit line keeps among them."""
    monkeypatch.setattr(logstream, "AROUND_BUDGET", 0)  # no hit's surroundings kept
    frame = "svc:     at com.example.Server.run(Server.java:9)"
    chain = [
        "svc: request failed: " + render_message(records[20]["errorMessage"], "42"),
        "svc:     at com.example.Handler.handle(Handler.java:42)",
        frame,
        "svc:     at com.example.Main.main(Main.java:3)",
        "svc: Caused by: com.example.PoolException: pool drained",
        "svc:     at com.example.Pool.take(Pool.java:7)",
    ]
    text, _at = _around(records, chain)
    excerpt = read_excerpt(full_matcher, [text.encode()], chunk_bytes=100_000)
    assert frame in excerpt.text.split("\n")
    assert _shape(match_excerpt(full_matcher, excerpt)) == _shape(_whole(full_matcher, text))


@needs_data
@pytest.mark.usefixtures("small_log")
def test_a_stack_trace_across_a_block_boundary_reads_as_when_read_whole(
    full_matcher, records
) -> None:
    trace = [
        "2026-11-30T01:00:01.000Z ERROR app::module: request failed",
        "Traceback (most recent call last):",
        '  File "/srv/app/handlers.py", line 42, in handle',
        "    pool.take()",
        '  File "/srv/app/pool.py", line 7, in take',
        "    raise SourceError(msg)",
        "app.errors.SourceError: " + WRAPPED[0].split(": ", 1)[1] + " " + WRAPPED[1].strip(),
    ]
    text, at = _around(records, trace)
    cut = text.index('  File "/srv/app/pool.py"', at)  # between the two frames
    whole = _whole(full_matcher, text)
    line = text.count("\n", 0, at) + len(trace)
    assert any(m.key == WRAPPED_ID and m.line == line for m in whole.matches)
    for chunk in (cut, 64 * 1024):
        assert _shape(_in_blocks(full_matcher, text, [cut], chunk)) == _shape(whole)


@needs_data
@pytest.mark.usefixtures("small_log")
def test_a_real_mixed_log_in_blocks_gives_every_answer_of_reading_it_whole(
    full_matcher, records
) -> None:
    """Runs of plain, kubectl, journald and JSON lines with an error line in 100: the same
    matches (record, line, span, text, score, reason, evidence), answers with their counts
    and order, groups with their first and last lines, and normalisation steps, from an
    excerpt that keeps a part of the log."""
    text = _mixed_log(records, 30_000)
    whole = _whole(full_matcher, text)
    assert len(whole.answers) > 50
    data = text.encode()
    blocks = [data[i : i + 50_000] for i in range(0, len(data), 50_000)]
    excerpt = read_excerpt(full_matcher, blocks, chunk_bytes=100_000)
    assert len(excerpt.text) < 0.8 * len(text)
    got = match_excerpt(full_matcher, excerpt)
    assert _shape(got) == _shape(whole)
    assert any(g.count > 1 for g in got.groups)  # counted across blocks
    assert _shape(full_matcher.match(text)) == _shape(whole)  # a whole log's own path


@needs_data
@pytest.mark.usefixtures("small_log")
def test_a_log_dense_with_triggers_is_read_whole_as_text_and_says_so_in_blocks(
    full_matcher, records
) -> None:
    """CRLF on every line: read whole, such a log is normalised in one go, not by regions.
    Given as text it is (the excerpt would not answer the same); read in blocks, the report
    says it was normalised around its errors only."""
    text = _mixed_log(records, 6_000).replace("\n", "\r\n")
    whole = _whole(full_matcher, text)
    assert _shape(full_matcher.match(text)) == _shape(whole)
    assert DENSE_NOTE not in whole.notes
    data = text.encode()
    got = match_excerpt(full_matcher, read_excerpt(full_matcher, [data], chunk_bytes=100_000))
    assert DENSE_NOTE in got.notes
    assert {m.key for m in got.matches} == {m.key for m in whole.matches}


@needs_data
@pytest.mark.usefixtures("small_log")
def test_a_log_given_as_bytes_is_matched_as_its_text(full_matcher, records) -> None:
    """Bytes are matched as their UTF-8 text (a byte that is not UTF-8 as U+FFFD): a whole
    log's lines are picked from the bytes, a paste is decoded."""
    text, _ = _around(records, WRAPPED)
    data = text.encode()
    data = data[:10] + b"\xff" + data[10:]  # on the first line, far from the message
    got = full_matcher.match(data)
    assert isinstance(got.normalised.original, Utf8Text)  # matched from its excerpt
    assert _shape(got) == _shape(full_matcher.match(data.decode("utf-8", "replace")))
    assert any(m.key == WRAPPED_ID for m in got.matches)
    paste = "\n".join(WRAPPED).encode()
    assert _shape(full_matcher.match(paste)) == _shape(full_matcher.match(paste.decode()))
