"""Request and response shapes of ``POST /api/match`` (its OpenAPI schema is built from
these)."""

from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import Field


class MatchIn(Schema):
    text: str = Field(description="The pasted text: one line or a whole log.")


class AlsoMatch(Schema):
    """Another record that read the same text as a match, and why it was not chosen."""

    record_id: str
    slug: str
    repo: str
    why: str


class OlderWording(Schema):
    """The older wording of its record's message that the input has (an alias)."""

    first_release: str = Field(description="the first release that printed this wording")
    last_release: str = Field(description="the last release that printed this wording")
    current_message: str = Field(description="the record's message as releases now word it")
    message: str = Field("", description="the older wording's template")
    since: str = Field("", description="the first release of the current wording ('' unknown)")


class ReleaseFitOut(Schema):
    """The releases the input's own text places the error in."""

    ranges: list[list[str]] = Field(description="[first, last] runs of releases, oldest first")
    by: Literal["line numbers", "version"] = Field(
        description="a frame's file and line where the record's site was, or a version string"
    )
    shown: str = Field(description="what in the input says so")


class MatchHit(Schema):
    record_id: str
    slug: str
    repo: str
    line: int = Field(description="1-based line in the input")
    span: list[int] = Field(description="[start, end] character offsets in the input")
    text: str
    captures: list[str]
    score: float
    kind: str = Field(
        "exact", description="exact, or a partial match: relaxed, truncated, diverged, fuzzy"
    )
    evidence: list[str] = Field(
        [], description="what in the paste says this record raised it (frames, class, ...)"
    )
    alternative_of: str | None = Field(
        None, description="record_id of the better match that read the same text"
    )
    count: int | None = Field(
        None, description="occurrences of this error in the input (best readings only)"
    )
    also_matches: list[AlsoMatch] = Field(
        [], description="the other records that read the same text (best readings only)"
    )
    wording: OlderWording | None = Field(
        None, description="null: the input has the record's current wording; else the older one"
    )
    fits_releases: list[str] | None = Field(
        None,
        description="[first, last] release the input's frames or version string fit (the "
        "newest run); null when the input does not say",
    )
    fits: ReleaseFitOut | None = None
    removed_in: str | None = Field(None, description="the first release without this error")


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


class MatchAnswer(Schema):
    """One error of the input: the page's card and summary row, in the order to read them."""

    record_id: str
    count: int = Field(description="occurrences in the input (a multi-line message once)")
    first_line: int
    last_line: int
    order: int
    reason: str
    cause: str | None


class MatchOut(Schema):
    """What ``manage.py match --json`` prints (more keys may follow: normalisation,
    reasons); tools rely on these keys, so they only ever grow."""

    matches: list[MatchHit]
    suggestions: list[MatchSuggestion]
    groups: list[MatchGroup] = []
    answers: list[MatchAnswer] = Field(
        [], description="one per error (each piece of text read once), root cause first"
    )
    elapsed_ms: float
