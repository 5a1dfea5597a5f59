"""Request and response shapes of the JSON API (its OpenAPI schema is built from these)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import Field

from kb.browse.selectors import MAX_PAGE_SIZE, PAGE_SIZE


class ErrorOut(Schema):
    detail: str


class RefusalOut(ErrorOut):
    """A match request refused (``kb.limits.Refusal``): a bad body (400), too large (413),
    an unsupported media type (415), past the rate limit (429)."""

    error: str
    status: int
    max_bytes: int | None = None
    size: int | None = None
    retry_after: int | None = None


class ValidationOut(Schema):
    """django-ninja's answer to a bad parameter (which one, why)."""

    detail: list[dict[str, Any]]


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


class RecordRow(Schema):
    id: str
    slug: str
    repo: str
    error_message: str
    error_class: str | None
    error_code: str | None
    error_type: str
    severity: str
    handling_strategy: str | None
    tags: list[str]
    url: str
    api_url: str


class FacetValueOut(Schema):
    value: str
    count: int
    selected: bool


class FacetOut(Schema):
    param: str
    label: str
    selected: str
    values: list[FacetValueOut]


class PageMeta(Schema):
    """Where a page sits in its listing: every paged answer starts with these."""

    count: int
    page: int
    pages: int
    page_size: int
    next: str | None
    previous: str | None


class RecordPage(PageMeta):
    params: dict[str, str]
    items: list[RecordRow]
    facets: list[FacetOut]


class TagOut(Schema):
    name: str
    count: int
    url: str
    api_url: str


class TagPage(PageMeta):
    items: list[TagOut]


class TagDetail(PageMeta):
    tag: str
    url: str
    items: list[RecordRow]


class RecordFilters(Schema):
    q: str = Field("", description="Full-text search (message, class, code, slug, docs)")
    repo: str = ""
    severity: str = ""
    error_type: str = ""
    error_class: str = ""
    handling_strategy: str = ""
    tag: str = ""
    page: int = Field(1, ge=1)
    page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    facets: bool = Field(True, description="Include facet counts")
