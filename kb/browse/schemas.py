"""Request and response shapes of the JSON API (its OpenAPI schema is built from these)."""

from __future__ import annotations

from ninja import Schema
from pydantic import Field

from kb.browse.selectors import MAX_PAGE_SIZE, PAGE_SIZE


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
    releases: list[str] = Field(
        description="The chosen repository's release names, oldest first (what `release` "
        "takes; empty without `repo`)"
    )
    release: list[str] | None = Field(
        description="The releases the `release` filter covers (a series is several)"
    )
    more_found: bool = Field(
        default=False,
        description="A search found more records than it lists: `count` is then the first "
        "ones found (500), ranked, and the facets count those; add words or filters to "
        "narrow it",
    )
    release_error: str | None = Field(
        description="Why the `release` asked for cannot be read (no `repo`, a name that is "
        "not a version, a release its records do not name); the page then lists nothing, "
        "as the HTML list does"
    )


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
    release: str = Field(
        "",
        description="With `repo`: records whose release range reaches this release of it "
        "(`1.4.2`), or any release of a series (`1.4` or `1.4.x`)",
    )
    page: int = Field(1, ge=1)
    page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    facets: bool = Field(True, description="Include facet counts")
