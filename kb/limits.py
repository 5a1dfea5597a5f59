"""How much text the app takes at once, and the one way it says no.

Every "too large" decision is made here: the request body's ``Content-Length``
(``check_body``, from ``kb.middleware`` before anything reads the body), and through
``check`` an uploaded log as it streams in (the paste view's upload handler), the pattern
bench's sample and ``manage.py match``'s input. A pasted text itself is checked by the
matcher (``match_text(text, max_bytes=...)`` raises ``kb.matcher.PasteTooLarge``) and
``from_matcher`` turns that into the same refusal, so the paste page, the API, the bench
and the command all word it alike.

A refusal is data (``Refusal``: status, title, detail, extra JSON keys), not markup: the
API answers ``as_json()``, pages and htmx fragments render ``templates/kb/_error.html``
through ``kb.views.errors.refusal_response``. The wording lives here once, for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat

from kb.matcher import PasteTooLarge

# What to do about a refusal, by what was refused.
ADVICE = {
    "paste": "Paste the part around the error (a few lines before and after it is plenty), "
    "or upload the log as a file.",
    "file": "Upload the part of the log around the error.",
    "request": "Send less at once: paste the part around the error, or upload the log as a file.",
    "sample": "Try the pattern on the lines around the error.",
    "input": "Match the part of the log around the error, or raise the limit with --max-bytes.",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the app will not serve, told so the person can act on it."""

    status: int
    title: str
    detail: str
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"error": self.title, "detail": self.detail, "status": self.status, **self.extra}


class TooLarge(ValueError):
    """``what`` ("paste", "file", "request", "sample", "input") is over ``limit`` bytes;
    ``size`` is its size when known (a body refused by its header is never read)."""

    def __init__(self, what: str, limit: int, size: int | None = None) -> None:
        self.what = what
        self.limit = limit
        self.size = size
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        limit = filesizeformat(self.limit)
        if self.size is None:
            said = f"The {self.what} is larger than the limit of {limit}."
        else:
            said = f"The {self.what} is {filesizeformat(self.size)}; the limit is {limit}."
        return f"{said} {ADVICE.get(self.what, '')}".strip()

    @property
    def refusal(self) -> Refusal:
        return Refusal(
            status=413,
            title="That is more than we can match at once",
            detail=self.detail,
            extra={"max_bytes": self.limit, "size": self.size},
        )


def rate_limited(wait: int) -> Refusal:
    """The refusal past the match rate limit; ``wait`` is the seconds until the next window."""
    return Refusal(
        status=429,
        title="Too many requests",
        detail=f"You have matched a lot of text in the last minute. Try again in {wait} seconds.",
        extra={"retry_after": wait},
    )


def check(what: str, size: int | None, limit: int, *, exact: bool = True) -> None:
    """Raise ``TooLarge`` when ``size`` bytes are over ``limit`` (an unknown size passes).

    ``exact=False`` when ``size`` is only what was read before giving up (a stream read
    one byte past the limit): the refusal then does not claim to know the real size.
    """
    if size is not None and size > limit:
        raise TooLarge(what, limit, size if exact else None)


def text_bytes(text: str) -> int:
    """A text's size as the limits count it: its UTF-8 bytes."""
    return len(text.encode("utf-8", "replace"))


def from_matcher(exc: PasteTooLarge, what: str = "paste") -> TooLarge:
    """The matcher's refusal of a text, as the app's."""
    return TooLarge(what, exc.limit, exc.size)


def content_length(request: HttpRequest) -> int:
    """The body size the client declares (0 when absent or malformed)."""
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def is_upload(request: HttpRequest) -> bool:
    return request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data")


def check_body(request: HttpRequest) -> None:
    """Refuse a body larger than the app reads, from its ``Content-Length`` alone.

    Form and JSON bodies may be up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (room for a
    percent-encoded paste); uploads (a log file on the paste page, a JSONL file in the
    admin) up to ``KB_MAX_UPLOAD_BYTES``, and their views bound the file further. The
    refusal names the limit the person knows (the paste or the log limit), not the
    body's framing allowance.
    """
    if is_upload(request):
        body_limit, what, shown = settings.KB_MAX_UPLOAD_BYTES, "file", settings.KB_MAX_LOG_BYTES
    else:
        body_limit, what = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "paste"
        shown = settings.KB_MAX_PASTE_BYTES
    if content_length(request) > body_limit:
        raise TooLarge(what, shown)
