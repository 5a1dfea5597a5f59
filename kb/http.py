"""How the site takes a request and answers it, one way for every app: the typed request,
the size limits and the one way the app says no, the error pages, and keeping an answer
out of every cache.

django-htmx's middleware sets ``request.htmx`` on every request; ``HtmxHttpRequest``
declares it once so every view gets the same typed request.

Every "too large" decision is made here: the request body's ``Content-Length``
(``check_body``, from ``kb.ops.middleware`` before anything reads the body), and through
``check`` an uploaded log as it streams in (the paste view's upload handler), the pattern
tester's sample and ``manage.py match``'s input, and through ``gunzip`` a compressed log's
decompressed size (a gzip bomb is refused, not inflated). A pasted text itself is checked by the
matcher (``match_text(text, max_bytes=...)`` raises ``kb.engine.PasteTooLarge``) and
``from_matcher`` turns that into the same refusal, so the paste page, the API, the tester
and the command all word it alike.

A refusal is data (``Refusal``: status, title, detail, extra JSON keys), not markup: the
API answers ``as_json()`` (its OpenAPI shape is ``RefusalOut``), pages and htmx fragments
render ``templates/kb/_error.html`` through ``refusal_response``, wherever the refusal is
decided, the middleware included, so it reads the same from every door.

A write the database declines for now (locked past the busy timeout, or read-only:
``write_unavailable``) is a refusal too, 503 with ``Retry-After`` (``write_paused_response``),
given alike by ``kb.ops.middleware``, the API's exception handler and the 500 handler.

An htmx request gets the ``kb/_error.html`` fragment instead of a whole page, so a results
area shows the message in place (400, 413 and 429 swap, see ``kb/_htmx_head.html``; other
statuses are shown by ``static/kb/app.js``). The 500 view must work when little else
does, so it falls back to a fixed string if even its template fails to render.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails
from ninja import Schema

from kb.engine import PasteTooLarge

log = logging.getLogger(__name__)


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def no_store(response: HttpResponse) -> HttpResponse:
    """Neither the browser nor a proxy keeps ``response``: for answers to requests that may
    carry a paste, and for what people reported."""
    response["Cache-Control"] = "no-store"
    return response


def client_address(request: HttpRequest) -> str:
    """The client's address, trusting only ``KB_TRUSTED_PROXY_COUNT`` proxies."""
    proxies = settings.KB_TRUSTED_PROXY_COUNT
    if proxies > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= proxies:
            return hops[-proxies]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


# What to do about a refusal, by what was refused.
ADVICE = {
    "paste": "Paste the part around the error (a few lines before and after it is plenty), "
    "or upload the log as a file.",
    "file": "Upload the part of the log around the error.",
    "request": "Send less at once: paste the part around the error, or upload the log as a file.",
    "sample": "Try the pattern on the lines around the error.",
    "input": "Match the part of the log around the error, or raise the limit with --max-bytes.",
    "log": "Send the part of the log around the error.",
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


# What a client is told to wait (``Retry-After``) when the database takes no writes for now.
WRITE_RETRY_AFTER_SECONDS = 10
# PostgreSQL's SQLSTATEs for "not now": lock_not_available (``lock_timeout`` ran out, or
# ``NOWAIT``) and read_only_sql_transaction (a replica, or ``default_transaction_read_only``).
_PG_LOCKED, _PG_READ_ONLY = "55P03", "25006"


def write_unavailable(exc: BaseException) -> str | None:
    """``"locked"`` or ``"read-only"`` when ``exc`` is the database declining a write for
    now (another connection holds the write lock, or the database is read-only), else
    ``None``: the one test of "degraded, not broken" that the 503 answer, ``/healthz`` and
    the task worker's retry share.

    SQLite says it in the message (Python's sqlite3 gives no error code for it); psycopg
    in the SQLSTATE of the error Django wraps (``__cause__``).
    """
    if not isinstance(exc, DatabaseError):
        return None
    state = getattr(exc.__cause__, "sqlstate", None) or getattr(exc, "sqlstate", None)
    if state == _PG_LOCKED:
        return "locked"
    if state == _PG_READ_ONLY:
        return "read-only"
    message = str(exc).lower()
    if "database is locked" in message or "database table is locked" in message:
        return "locked"
    if "readonly database" in message or "read-only" in message:
        return "read-only"
    return None


# Until when (monotonic) this process counts the database as declining writes: set by each
# write it declined, so that the requests after it wait a moment for the lock instead of the
# whole busy timeout (kb.ops.middleware.WriteUnavailableMiddleware) and the rate limiter
# stops trying to count; it lapses WRITE_RETRY_AFTER_SECONDS after the last refusal.
_writes_paused_until = 0.0


def pause_writes() -> None:
    """Note that the database declined a write just now (``write_unavailable``)."""
    global _writes_paused_until
    _writes_paused_until = time.monotonic() + WRITE_RETRY_AFTER_SECONDS


def writes_paused() -> bool:
    """Whether this process saw the database decline a write in the last
    ``WRITE_RETRY_AFTER_SECONDS``."""
    return time.monotonic() < _writes_paused_until


def resume_writes() -> None:
    """Forget a pause (tests that lock and release the database in one process)."""
    global _writes_paused_until
    _writes_paused_until = 0.0


def write_paused(wait: int = WRITE_RETRY_AFTER_SECONDS) -> Refusal:
    """The refusal of a write the database cannot take for now (``write_unavailable``)."""
    return Refusal(
        status=503,
        title="Saving is paused for a moment",
        detail=(
            "The knowledge base cannot save changes right now (maintenance or a large "
            f"import); reading and matching still work. Try again in {wait} seconds."
        ),
        extra={"retry_after": wait},
    )


def write_paused_response(request: HttpRequest, exc: BaseException) -> HttpResponse | None:
    """The 503 with ``Retry-After`` for a write the database declined (JSON under
    ``/api/``, the error page or fragment elsewhere), logged as one warning line rather
    than a traceback; ``None`` for any other error, which stays a 500."""
    kind = write_unavailable(exc)
    if kind is None:
        return None
    pause_writes()
    log.warning("database %s, write refused with 503: %s %s", kind, request.method, request.path)
    response = refusal_response(request, write_paused())
    response["Retry-After"] = str(WRITE_RETRY_AFTER_SECONDS)
    return response


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


# Where a whole log may be sent as the request body itself, and the media types it comes
# as: a CI job posts the file it has (``curl --data-binary @build.log``, ``contrib/kb_match.py``)
# and gets the log limit; a JSON or form field stays a paste, with the paste's limit.
LOG_BODY_PATHS = ("/api/match",)
LOG_BODY_TYPES = (
    "text/plain",
    "application/octet-stream",
    "application/gzip",
    "application/x-gzip",
)
GZIP_MAGIC = b"\x1f\x8b"
GUNZIP_PART = 1024 * 1024  # decompressed bytes produced per step


def media_type(request: HttpRequest) -> str:
    """The body's media type, without parameters, lower case (``""`` when absent)."""
    return request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()


def is_log_body(request: HttpRequest) -> bool:
    """The body is a whole log file sent to an endpoint that takes one."""
    return request.path.rstrip("/") in LOG_BODY_PATHS and media_type(request) in LOG_BODY_TYPES


def check_body(request: HttpRequest) -> None:
    """Refuse a body larger than the app reads, from its ``Content-Length`` alone.

    Form and JSON bodies may be up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (room for a
    percent-encoded paste); uploads (a log file on the paste page, a JSONL file in the
    admin) up to ``KB_MAX_UPLOAD_BYTES``, and their views bound the file further; a log
    sent as the body of ``/api/match`` (``is_log_body``) up to ``KB_MAX_LOG_BYTES``. The
    refusal names the limit the person knows (the paste or the log limit), not the
    body's framing allowance.
    """
    if is_upload(request):
        body_limit, what, shown = settings.KB_MAX_UPLOAD_BYTES, "file", settings.KB_MAX_LOG_BYTES
    elif is_log_body(request):
        body_limit, what, shown = settings.KB_MAX_LOG_BYTES, "log", settings.KB_MAX_LOG_BYTES
    else:
        body_limit, what = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "paste"
        shown = settings.KB_MAX_PASTE_BYTES
    if content_length(request) > body_limit:
        raise TooLarge(what, shown)


# --- JSON nesting --------------------------------------------------------------------
# Python's json parser recurses once per level, so a body of ``[`` repeated fails with
# RecursionError deep inside whoever parses it. Every JSON body's depth is read here first
# (``kb.ops.middleware``, before anything parses it), in C-speed steps: strings cut out,
# the brackets left summed.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STEP = tuple(1 if c in b"[{" else -1 if c in b"]}" else 0 for c in range(256))


def json_depth(body: bytes) -> int:
    """How deep the JSON text ``body`` nests: its most arrays and objects open at once,
    brackets inside strings not counted. Linear in the body, whatever it holds (an
    unterminated string's brackets count: that text is refused either way)."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def is_json(request: HttpRequest) -> bool:
    kind = request.content_type or ""
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


def too_deep(request: HttpRequest) -> Refusal | None:
    """The 400 for a JSON body nested deeper than ``KB_MAX_JSON_DEPTH``, else ``None``."""
    if not is_json(request):
        return None
    limit = settings.KB_MAX_JSON_DEPTH
    body = request.body
    # No deeper than the brackets it opens: an ordinary body is passed on two counts.
    if body.count(b"[") + body.count(b"{") <= limit or json_depth(body) <= limit:
        return None
    return Refusal(
        400,
        "Bad request",
        f"The JSON body nests deeper than {limit} levels; no request here needs that many.",
    )


def read_bounded(chunks: Iterable[bytes], what: str, limit: int) -> bytes:
    """The bytes of ``chunks`` joined, refused (``TooLarge``) as soon as they pass ``limit``:
    a body without a trustworthy length is never held past the limit."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        check(what, size, limit, exact=False)
        parts.append(chunk)
    return b"".join(parts)  # one copy of the whole, not one per chunk


def gunzip(data: bytes, what: str, limit: int) -> bytes:
    """``data`` decompressed when it starts with gzip's magic bytes (the content decides,
    not a file name), else ``data`` as it is.

    The output is bounded: past ``limit`` bytes it stops and raises ``TooLarge``, so a
    small gzip bomb costs ``limit`` bytes of memory and a polite 413, never the process.
    Concatenated gzip members (``cat a.gz b.gz``) read as one file, as ``gunzip`` reads
    them. Raises ``ValueError`` for a damaged or cut-off stream.
    """
    if not data.startswith(GZIP_MAGIC):
        return data
    parts: list[bytes] = []
    size = 0
    rest = data
    while rest.startswith(GZIP_MAGIC):
        inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        pending = rest
        try:
            while not inflate.eof:
                # Bounded output per call: at most what the limit leaves, and one byte
                # more, enough to know it is too much; and a part at a time, so the
                # output never sits twice in memory before the join.
                chunk = inflate.decompress(pending, min(GUNZIP_PART, limit + 1 - size))
                size += len(chunk)
                check(what, size, limit, exact=False)
                parts.append(chunk)
                pending = inflate.unconsumed_tail
                if not chunk and not pending:
                    break
        except zlib.error as exc:
            raise ValueError(f"The {what} is not valid gzip data ({exc}).") from None
        if not inflate.eof:
            raise ValueError(f"The {what}'s gzip data is cut short.")
        rest = inflate.unused_data
    return b"".join(parts)


def bounded(blocks: Iterable[bytes], what: str, limit: int) -> Iterator[bytes]:
    """``blocks`` as they come, refused (``TooLarge``) as soon as they pass ``limit``."""
    size = 0
    for block in blocks:
        size += len(block)
        check(what, size, limit, exact=False)
        yield block


def gunzip_blocks(blocks: Iterable[bytes], what: str, limit: int) -> Iterator[bytes]:
    """`gunzip` as a stream: ``blocks`` decompressed a part at a time when they start with
    gzip's magic bytes, else as they are; the output bounded by ``limit`` (``TooLarge``),
    a damaged or cut-off stream a ``ValueError``, concatenated members read as one file.
    Memory: one input block and one output part (`GUNZIP_PART`), whatever the file's size."""
    it = iter(blocks)
    head = b""
    for block in it:
        head += block
        if len(head) >= len(GZIP_MAGIC):
            break
    if not head.startswith(GZIP_MAGIC):
        if head:
            yield head
        yield from it
        return
    size = 0
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    pending = head
    exhausted = False
    try:
        while True:
            if inflate.eof:
                rest = inflate.unused_data or (b"" if exhausted else _next_block(it))
                if not rest.startswith(GZIP_MAGIC):
                    return  # the end, or bytes after the last member: gzip ignores them
                inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                pending = rest
            if not pending and not exhausted:
                pending = _next_block(it)
                exhausted = not pending
            chunk = inflate.decompress(pending, min(GUNZIP_PART, limit + 1 - size))
            pending = inflate.unconsumed_tail
            size += len(chunk)
            check(what, size, limit, exact=False)
            if chunk:
                yield chunk
            elif exhausted and not pending and not inflate.eof:
                raise ValueError(f"The {what}'s gzip data is cut short.")
    except zlib.error as exc:
        raise ValueError(f"The {what} is not valid gzip data ({exc}).") from None


def _next_block(it: Iterator[bytes]) -> bytes:
    """The next non-empty block of ``it`` (``b""`` at its end)."""
    for block in it:
        if block:
            return block
    return b""


FALLBACK_500 = (
    "<!doctype html><title>Server error</title><h1>Something went wrong on our side</h1>"
    "<p>Please try again in a moment.</p>"
)


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request. Read from the header, not ``request.htmx``: the limits middleware
    answers before django-htmx's middleware has run."""
    return request.headers.get("HX-Request") == "true"


def _render(
    request: HttpRequest, template: str, status: int, context: dict[str, Any]
) -> HttpResponse:
    if wants_fragment(request):
        response = render(request, "kb/_error.html", {**context, "status": status}, status=status)
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request"])  # page or fragment, by request header
    return response


def refusal_response(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """JSON under ``/api/``, else the error fragment (htmx) or a page; never cached, since
    the request it answers may carry a paste."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(refusal.as_json(), status=refusal.status)
    else:
        response = _render(request, "refusal.html", refusal.status, {"refusal": refusal})
    return no_store(response)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):  # a body past Django's own field limit
        too_large = TooLarge("request", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return refusal_response(request, too_large.refusal)
    return _render(request, "400.html", 400, {})


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _render(request, "403.html", 403, {})


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _render(request, "404.html", 404, {})


def server_error(request: HttpRequest) -> HttpResponse:
    # A write the database declined outside any view (a session saved by its middleware,
    # say) arrives here, past WriteUnavailableMiddleware: it is a 503 all the same.
    exc = sys.exc_info()[1]
    if exc is not None:
        paused = write_paused_response(request, exc)
        if paused is not None:
            return paused
    try:
        return _render(request, "500.html", 500, {})
    except Exception:  # the error page itself failed: answer with fixed text
        log.exception("500 page failed to render")
        return HttpResponseServerError(FALLBACK_500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """For ``CSRF_FAILURE_VIEW``: a stale form is the usual cause, so say to reload."""
    return _render(request, "403.html", 403, {"csrf": True})


class ErrorOut(Schema):
    detail: str


class RefusalOut(ErrorOut):
    """A request refused (``kb.http.Refusal``): a bad body (400), too large (413), an
    unsupported media type (415), past the rate limit (429), a write the database cannot
    take for now (503)."""

    error: str
    status: int
    max_bytes: int | None = None
    size: int | None = None
    retry_after: int | None = None


class ValidationOut(Schema):
    """django-ninja's answer to a bad parameter (which one, why)."""

    detail: list[dict[str, Any]]
