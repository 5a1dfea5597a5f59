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
"""

from __future__ import annotations

import codecs
import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router

from kb.engine import PasteTooLarge
from kb.http import (
    Refusal,
    RefusalOut,
    TooLarge,
    ValidationOut,
    from_matcher,
    no_store,
    refusal_response,
)
from kb.matching.formats import known_count, render
from kb.matching.formats.data import report_data
from kb.matching.holder import match_text
from kb.matching.schemas import MatchIn, MatchOut
from kb.matching.signals import matched

router = Router()


MATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": MatchIn.model_json_schema()},
            "text/plain": {"schema": {"type": "string", "minLength": 1}},
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


class Unsupported(ValueError):
    """A body in a media type this endpoint does not take (415)."""


def _paste_text(request: HttpRequest) -> str:
    """The text to match from a JSON, form or plain-text body.

    Raises ``ValueError`` (400) for a missing or malformed body, ``Unsupported`` (415) for
    another media type: a tool that sends the wrong thing learns it, instead of getting
    "no known error" for text it never meant to send.
    """
    content_type = request.content_type or ""
    if not request.body:
        raise ValueError('Send the text to match: JSON {"text": "..."} or a text/plain body.')
    if content_type == "application/json":
        try:
            data = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            raise ValueError('The body is not valid JSON; send {"text": "..."}.') from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ValueError('Send a JSON object with a string field "text".')
        return data["text"]
    if content_type in FORM_TYPES:
        text = request.POST.get("text")
        if text is None:
            raise ValueError('Send the text in a form field named "text".')
        return text
    if content_type == "text/plain":
        return request.body.decode(_charset(request.encoding), errors="replace")
    raise Unsupported(
        "Send application/json, text/plain or a form field named text, not "
        f"{content_type or 'a body without a Content-Type'}."
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
        'Body: JSON {"text": "..."}, text/plain, or a form field `text` (e.g. '
        "`curl --data-urlencode text@app.log`). Answers the object of "
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
        text = _paste_text(request)
    except RequestDataTooBig:  # a multipart text field past Django's field limit
        return refusal_response(request, TooLarge("paste", settings.KB_MAX_PASTE_BYTES).refusal)
    except Unsupported as exc:
        return _refuse(request, 415, "Unsupported media type", str(exc))
    except ValueError as exc:
        return _refuse(request, 400, "Bad request", str(exc))
    try:
        result = match_text(text, max_bytes=settings.KB_MAX_PASTE_BYTES)
    except PasteTooLarge as exc:
        return refusal_response(request, from_matcher(exc).refusal)
    matched(result)  # usage signals: counted in memory, never fails the match
    if format == "json":
        data = result.as_json()
        response: HttpResponse = JsonResponse(data)
    else:
        data = report_data(result, text, absolute=request.build_absolute_uri)
        body = render(format, data, file=file or None)
        response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    response["KB-Known-Errors"] = str(known_count(data))
    return no_store(response)
