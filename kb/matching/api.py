"""``POST /api/match``: matching for tools.

It answers exactly ``kb.matching.holder.match_text(text).as_json()``, the object
``manage.py match --json`` prints (the matching contract), for a JSON body
``{"text": "..."}``, a ``text/plain`` body, or a form field ``text``. It changes no state,
so it takes no session and needs no CSRF token (django-ninja checks CSRF only for
cookie-based auth, and this API has none): CI jobs and scripts call it with a bare
``curl``. Abuse is bounded by ``kb.ops.middleware`` (body size, per-client rate limit);
results are ``no-store``. ``?format=text|github|markdown`` answers the same result printed
as ``manage.py match --format`` prints it (``kb.matching.formats``), as ``text/plain``, so a
client such as ``contrib/kb_match.py`` needs no renderer; every answer carries
``KB-Known-Errors`` (the number of distinct known errors) for the client's exit status.

Two sizes, by what was sent. A JSON or form field ``text`` is a paste, held to the paste
box's limit (``KB_MAX_PASTE_BYTES``). A whole log, the body itself (``text/plain``,
``application/octet-stream``, ``application/gzip``) or a multipart file field ``log``, is
held to ``KB_MAX_LOG_BYTES``, the size ``manage.py match`` reads, so a CI job gets the
same answer from a shared server as from the command. A log may be gzip-compressed: said
by ``Content-Encoding: gzip``, or found by gzip's magic bytes (a ``.gz`` file posted as it
is); its decompressed size is bounded by the same limit (``kb.http.gunzip``).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router

from kb.engine import PasteTooLarge
from kb.engine.textmap import Text
from kb.http import (
    GZIP_MAGIC,
    LOG_BODY_TYPES,
    Refusal,
    RefusalOut,
    TooLarge,
    ValidationOut,
    bounded,
    from_matcher,
    gunzip,
    gunzip_blocks,
    is_log_body,
    media_type,
    no_store,
    read_bounded,
    refusal_response,
)
from kb.matching.formats import known_count, render
from kb.matching.formats.data import report_data
from kb.matching.holder import match_log, match_text
from kb.matching.schemas import MatchIn, MatchOut
from kb.matching.signals import matched
from kb.matching.views import LOG_FIELD, BoundedUploadHandler

router = Router()


# A whole log as the body: any bytes (UTF-8 text, or gzip found by its magic bytes). A
# multipart upload (a ``log`` file field) is taken too, and said in the description: a
# schema for it cannot say "a text field or a file" in a way generated requests respect.
LOG_BODY = {"type": "string", "format": "binary", "minLength": 1}
MATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": MatchIn.model_json_schema()},
            "text/plain": {"schema": {"type": "string", "minLength": 1}},
            "application/octet-stream": {"schema": LOG_BODY},
            "application/gzip": {"schema": LOG_BODY},
            "application/x-www-form-urlencoded": {"schema": MatchIn.model_json_schema()},
        },
    }
}


MATCH_TEXT_FORMATS = "^(json|text|github|markdown)$"
MATCH_RESPONSES = {
    "responses": {
        200: {
            "description": "The result: JSON by default, text/plain for the other formats",
            "headers": {
                "KB-Known-Errors": {
                    "description": "Distinct known errors found (0: none); a CI client's "
                    "exit status",
                    "schema": {"type": "integer", "minimum": 0},
                }
            },
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
}


def _refuse(request: HttpRequest, status: int, title: str, detail: str) -> HttpResponse:
    """A match request refused for its body: the same JSON as a too-large or rate-limited
    one (``kb.http.Refusal``), so a tool reads every refusal one way."""
    return refusal_response(request, Refusal(status, title, detail))


def _charset(name: str | None) -> str:
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:  # a made-up charset: read it as UTF-8
        return "utf-8"


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
# Content-Encoding values read as "no encoding".
IDENTITY = ("", "identity")
GZIP_ENCODINGS = ("gzip", "x-gzip")
READ_CHUNK = 64 * 1024


class Unsupported(ValueError):
    """A body in a media type this endpoint does not take (415)."""


@dataclass(frozen=True, slots=True)
class Sent:
    """What a request asks to match, and which limit holds it: a paste (``"paste"``, the
    paste box's limit) or a whole log (``"log"``/``"file"``, the log limit). A log sent as
    the body comes as ``blocks`` (read from the request as they are matched, gunzipped as a
    stream), not as ``text``."""

    text: str
    what: str
    limit: int
    blocks: Iterator[bytes] | None = None


def _paste(text: str) -> Sent:
    return Sent(text, "paste", settings.KB_MAX_PASTE_BYTES)


def _log(data: bytes, what: str, charset: str = "utf-8") -> Sent:
    """A whole log's bytes as text, gunzipped when compressed (by its magic bytes)."""
    limit = settings.KB_MAX_LOG_BYTES
    text = gunzip(data, what, limit).decode(charset, errors="replace")
    return Sent(text, what, limit)


def _encoding(request: HttpRequest) -> str:
    return request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()


def _chunks(request: HttpRequest) -> Iterator[bytes]:
    while chunk := request.read(READ_CHUNK):
        yield chunk


def _log_body(request: HttpRequest) -> Sent:
    """A log sent as the body itself, read from the stream (Django's ``request.body`` would
    refuse it past the form limit), bounded by the log limit before and after gunzip. A
    UTF-8 log is matched as it is read (``match_log``: in bounded memory); one in another
    charset is read whole and decoded."""
    encoding = _encoding(request)
    limit = settings.KB_MAX_LOG_BYTES
    chunks = bounded(_chunks(request), "log", limit)
    first = next(chunks, b"")
    while 0 < len(first) < len(GZIP_MAGIC):  # enough to tell gzip by its magic bytes
        more = next(chunks, b"")
        if not more:
            break
        first += more
    if not first:
        raise ValueError("Send the log as the body (text/plain or application/octet-stream).")
    if encoding in GZIP_ENCODINGS and not first.startswith(GZIP_MAGIC):
        raise ValueError("The body says Content-Encoding: gzip but is not gzip data.")
    charset = _charset(request.encoding) if media_type(request) == "text/plain" else "utf-8"
    if charset != "utf-8":
        return _log(read_bounded(chain([first], chunks), "log", limit), "log", charset)
    return Sent("", "log", limit, gunzip_blocks(chain([first], chunks), "log", limit))


def _form(request: HttpRequest) -> Sent:
    """A form: the ``log`` file field is a whole log (bounded as it streams in, spooled to
    a temporary file when large, matched in blocks), else the ``text`` field is a paste."""
    handler = BoundedUploadHandler(request, settings.KB_MAX_LOG_BYTES)
    request.upload_handlers = [handler]
    fields = request.POST  # parsing runs the handler
    if handler.refused is not None:
        raise handler.refused
    upload = request.FILES.get(LOG_FIELD)
    if upload is not None and upload.size:
        limit = settings.KB_MAX_LOG_BYTES
        return Sent("", "file", limit, gunzip_blocks(upload.chunks(), "file", limit))
    text = fields.get("text")
    if text is None:
        raise ValueError(f'Send a form field named "text" (or a log file in "{LOG_FIELD}").')
    return _paste(text)


def _sent(request: HttpRequest) -> Sent:
    """The text to match from a JSON, form, plain-text or log body.

    Raises ``ValueError`` (400) for a missing or malformed body, ``Unsupported`` (415) for
    another media type or encoding, ``TooLarge`` (413) past the limit: a tool that sends
    the wrong thing learns it, instead of getting "no known error" for text it never
    meant to send.
    """
    content_type = media_type(request)
    encoding = _encoding(request)
    if encoding not in IDENTITY and not (encoding in GZIP_ENCODINGS and is_log_body(request)):
        raise Unsupported(
            f"Content-Encoding {encoding!r} is not taken here: send a log as text/plain or "
            "application/octet-stream, plain or with Content-Encoding: gzip."
        )
    if is_log_body(request):
        return _log_body(request)
    if content_type in FORM_TYPES:
        return _form(request)
    if not request.body:
        raise ValueError('Send the text to match: JSON {"text": "..."} or a text/plain body.')
    if content_type == "application/json":
        try:
            data = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            raise ValueError('The body is not valid JSON; send {"text": "..."}.') from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ValueError('Send a JSON object with a string field "text".')
        return _paste(data["text"])
    raise Unsupported(
        "Send application/json, a log as the body (" + ", ".join(LOG_BODY_TYPES) + "), or a "
        f"form field named text, not {content_type or 'a body without a Content-Type'}."
    )


@router.post(
    "/match",
    response={
        200: MatchOut,
        400: RefusalOut,
        413: RefusalOut,
        415: RefusalOut,
        422: ValidationOut,
        429: RefusalOut,
    },
    summary="Match a paste against every active record",
    description=(
        'Body: JSON {"text": "..."} or a form field `text` (a paste, up to the paste limit); '
        "or a whole log up to the log limit: the body itself as text/plain, "
        "application/octet-stream or application/gzip (`curl --data-binary @build.log`), or a "
        "multipart file field `log`; a log may be gzip-compressed (Content-Encoding: gzip, "
        "or a .gz file as it is). Answers the object of "
        "`manage.py match --json`: confident matches best first, then suggestions. "
        "`?format=text|github|markdown` answers that result as `manage.py match --format` "
        "prints it (text/plain); `file` names the log in the github annotations."
    ),
    openapi_extra={**MATCH_BODY, **MATCH_RESPONSES},
    url_name="match",
)
def match(
    request: HttpRequest,
    format: str = Query("json", pattern=MATCH_TEXT_FORMATS),
    file: str = Query("", max_length=1000),
) -> HttpResponse:
    try:
        sent = _sent(request)
    except RequestDataTooBig:  # a multipart text field past Django's field limit
        return refusal_response(request, TooLarge("paste", settings.KB_MAX_PASTE_BYTES).refusal)
    except TooLarge as exc:
        return refusal_response(request, exc.refusal)
    except Unsupported as exc:
        return _refuse(request, 415, "Unsupported media type", str(exc))
    except ValueError as exc:
        return _refuse(request, 400, "Bad request", str(exc))
    text: Text = sent.text
    to_text = None
    try:
        if sent.blocks is not None:
            got = match_log(sent.blocks, max_bytes=sent.limit)
            result, text, to_text = got.result, got.text, got.to_text
        else:
            result = match_text(sent.text, max_bytes=sent.limit)
    except PasteTooLarge as exc:
        return refusal_response(request, from_matcher(exc, sent.what).refusal)
    except TooLarge as exc:  # a log body past the limit, found as it was read
        return refusal_response(request, exc.refusal)
    except ValueError as exc:  # a damaged gzip body, found as it was read
        return _refuse(request, 400, "Bad request", str(exc))
    matched(result)  # usage signals: counted in memory, never fails the match
    if format == "json":
        data = result.as_json()
        response: HttpResponse = JsonResponse(data)
    else:
        data = report_data(result, text, absolute=request.build_absolute_uri, to_text=to_text)
        body = render(format, data, file=file or None)
        response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    response["KB-Known-Errors"] = str(known_count(data))
    return no_store(response)
