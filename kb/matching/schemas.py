"""Request and response shapes of ``POST /api/match`` (its OpenAPI schema is built from
these)."""

from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import Field


class MatchIn(Schema):
    text: str = Field(description="The pasted text: one line or a whole log.")


class MatchHit(Schema):
    record_id: str
    slug: str
    repo: str
    line: int = Field(description="1-based line in the input")
    span: list[int] = Field(description="[start, end] character offsets in the input")
    text: str
    captures: list[str]
    score: float


class WordChange(Schema):
    record: str = Field(description="the record's words ('' when the paste added words)")
    paste: str = Field(description="the paste's words ('' when the paste lacks them)")


class WordSegment(Schema):
    op: Literal["same", "del", "ins", "value"] = Field(
        description="same: both have it; del: only the record; ins: only the paste; "
        "value: what the paste has at one of the message's placeholders"
    )
    text: str


class Reworded(Schema):
    """The word-level difference between a suggested record's message and the pasted line
    (the message's placeholders are wildcards, never counted as reworded)."""

    summary: str = Field(description="e.g. 'reworded: rfc1738 → SQLAlchemy'")
    changes: list[WordChange]
    segments: list[WordSegment] = Field(description="the record's message as the paste has it")


class MatchSuggestion(Schema):
    record_id: str
    similarity: float
    reason: str
    reworded: Reworded | None = Field(
        None, description="the words that differ from the record's message; null when none"
    )


class MatchGroup(Schema):
    """One known error over a whole log; the list is in the order to read them."""

    record_id: str
    count: int
    first_line: int
    last_line: int
    order: int = Field(description="1-based place in the order of what to read first")
    reason: str = Field(
        description="why it is there: 'root cause: innermost Caused by', 'first error in "
        "the log', 'consequence of the error on line N', ..."
    )
    cause: str | None = Field(description="record_id of the error this one is a consequence of")


class MatchOut(Schema):
    """What ``manage.py match --json`` prints (more keys may follow: normalisation,
    reasons); tools rely on these keys, so they only ever grow."""

    matches: list[MatchHit]
    suggestions: list[MatchSuggestion]
    groups: list[MatchGroup] = []
    elapsed_ms: float
