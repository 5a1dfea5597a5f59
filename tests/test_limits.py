"""Request size limits answer 413 with a friendly message, never 500
(docs/reliability.md#r10-size-limits).

Two layers: ``kb.ops.middleware`` refuses a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` from its
``Content-Length`` before anything reads it (Django alone would raise
``RequestDataTooBig`` inside CSRF and answer a bare 400); the matcher refuses a paste past
``KB_MAX_PASTE_BYTES`` and the paste view and API answer that with 413 too. Both are
``kb.http`` refusals, so every door (page, fragment, JSON, the match command) words them
alike.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.factories import make_record

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def _records_and_no_rate_limit(settings: object) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    make_record()


def _paste(size: int) -> str:
    line = "2026-11-30T03:12:44Z INFO worker heartbeat ok id=42\n"
    return (line * (size // len(line) + 1))[:size]


class _CountingInput(io.BytesIO):
    """A request body that counts what is read of it."""

    bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.bytes_read += len(line)
        return line


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/match/", "application/x-www-form-urlencoded"),
        ("/match/", "multipart/form-data; boundary=xyz"),
        ("/api/match", "application/json"),
        ("/api/match", "text/plain"),
    ],
)
def test_an_oversized_body_is_refused_before_a_byte_of_it_is_read(
    path: str, content_type: str
) -> None:
    """The 413 comes from ``Content-Length`` alone: however large the body, answering
    costs nothing (no timing needed: not a byte is read, and no view runs)."""
    from django.core.handlers.wsgi import WSGIRequest

    from kb.ops.middleware import RequestLimitsMiddleware

    if content_type.startswith("multipart"):
        size = settings.KB_MAX_UPLOAD_BYTES + 1
    elif content_type == "text/plain":  # a whole log sent as the body: the log's limit
        size = settings.KB_MAX_LOG_BYTES + 1
    else:
        size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
    body = _CountingInput(b"x" * size)
    request = WSGIRequest({
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "testserver",
        "SERVER_PORT": "80", "wsgi.url_scheme": "http", "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(size), "wsgi.input": body,
        "HTTP_HX_REQUEST": "true",
    })  # fmt: skip

    def view(_request: object) -> None:
        pytest.fail("the view ran")

    response = RequestLimitsMiddleware(view)(request)
    assert response.status_code == 413
    assert body.bytes_read == 0


def test_paste_just_under_the_limit_is_matched() -> None:
    response = Client().post("/match/", {"text": _paste(settings.KB_MAX_PASTE_BYTES - 10)})
    assert response.status_code == 200


def test_paste_just_over_the_limit_is_413_with_a_friendly_fragment() -> None:
    text = _paste(settings.KB_MAX_PASTE_BYTES + 10)
    response = Client().post("/match/", {"text": text}, headers=HX)
    assert response.status_code == 413
    html = response.content.decode()
    assert "<html" not in html
    assert "Traceback" not in html
    assert 'role="alert"' in html


def _form(text: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"text": text})


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize("encoding", ["urlencoded", "multipart"])
def test_body_over_the_upload_limit_is_a_413_fragment(encoding: str) -> None:
    text = _paste(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024)
    client = Client()
    kwargs: dict[str, object] = {"headers": HX}
    data: object = {"text": text}
    if encoding == "urlencoded":
        data, kwargs["content_type"] = _form(text), FORM
    response = client.post("/match/", data, **kwargs)
    assert response.status_code == 413
    html = response.content.decode()
    assert 'role="alert"' in html
    assert "<html" not in html
    assert "Traceback" not in html


def test_body_over_the_upload_limit_without_javascript_is_a_friendly_page() -> None:
    text = _paste(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024)
    response = Client().post("/match/", _form(text), content_type=FORM)
    assert response.status_code == 413
    html = response.content.decode()
    assert "<html" in html
    assert 'href="/"' in html
    assert "<h1>That is more than we can match at once</h1>" in html


def test_api_body_over_the_limit_is_json_413() -> None:
    body = {"text": _paste(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024)}
    response = Client().post("/api/match", json.dumps(body), content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    payload = response.json()
    assert payload["status"] == 413
    assert payload["max_bytes"] == settings.KB_MAX_PASTE_BYTES


def test_api_text_plain_over_the_log_limit_is_json_413(settings: Any) -> None:
    """A text/plain body is a whole log (tests/test_api_logs.py): held to the log's limit."""
    settings.KB_MAX_LOG_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = _paste(settings.KB_MAX_LOG_BYTES + 1024)
    response = Client().post("/api/match", body, content_type="text/plain")
    assert response.status_code == 413
    assert response.json()["status"] == 413
    assert response.json()["max_bytes"] == settings.KB_MAX_LOG_BYTES


def test_api_paste_over_the_paste_limit_but_small_body_is_413_not_500() -> None:
    """Owner: kb/api.py must answer ``PasteTooLarge`` with JSON 413."""
    body = {"text": _paste(settings.KB_MAX_PASTE_BYTES + 10)}
    response = Client().post("/api/match", json.dumps(body), content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")


def test_api_paste_just_under_the_limit_is_matched() -> None:
    body = {"text": _paste(settings.KB_MAX_PASTE_BYTES - 10)}
    response = Client().post("/api/match", json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    assert "matches" in response.json()


def test_paste_textarea_declares_a_max_length() -> None:
    html = Client().get("/").content.decode()
    assert f'maxlength="{settings.KB_MAX_PASTE_BYTES}"' in html


def test_big_multipart_upload_is_not_refused_as_a_paste() -> None:
    """Uploads are bounded by ``KB_MAX_UPLOAD_BYTES``, not the form-field limit."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 4096
    upload = SimpleUploadedFile("app.log", _paste(size).encode(), content_type="text/plain")
    response = Client().post("/match/", {"log": upload, "text": ""})
    assert response.status_code != 413
    assert response.status_code < 500


def test_too_many_fields_is_a_client_error_not_500() -> None:
    data = {f"f{i}": "x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 5)}
    response = Client().post("/match/", data, headers=HX)
    assert 400 <= response.status_code < 500


def test_check_refuses_only_past_the_limit() -> None:
    from kb.http import TooLarge, check

    check("paste", 100, 100)
    check("paste", None, 100)  # an unknown size is not refused here
    with pytest.raises(TooLarge) as refused:
        check("paste", 101, 100)
    assert (refused.value.size, refused.value.limit) == (101, 100)
    with pytest.raises(TooLarge) as unmeasured:
        check("input", 101, 100, exact=False)
    assert unmeasured.value.size is None
    assert "larger than the limit of 100" in unmeasured.value.detail


def test_a_too_large_paste_reads_the_same_on_the_page_and_in_the_api(settings: Any) -> None:
    """One wording: the paste page's fragment and the API's JSON carry the same detail."""
    from html import unescape

    settings.KB_MAX_PASTE_BYTES = 1000
    text = _paste(1500)
    api = Client().post("/api/match", json.dumps({"text": text}), content_type="application/json")
    page = Client().post("/match/", {"text": text}, headers=HX)
    assert (api.status_code, page.status_code) == (413, 413)
    payload = api.json()
    assert (payload["size"], payload["max_bytes"]) == (1500, 1000)
    assert payload["detail"].startswith("The paste is 1.5")
    html = unescape(page.content.decode())
    assert payload["error"] in html
    assert payload["detail"] in html


def test_a_body_refused_by_the_middleware_reads_the_same_as_a_view_refusal() -> None:
    """The middleware renders the same error fragment (from its template) as the views."""
    text = _paste(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024)
    refused = Client().post("/match/", _form(text), content_type=FORM, headers=HX)
    small = Client().post("/match/", {"text": _paste(settings.KB_MAX_PASTE_BYTES + 10)}, headers=HX)
    fragments = [
        re.sub(r"<p>.*?</p>", "<p/>", r.content.decode(), flags=re.S).strip()
        for r in (refused, small)
    ]
    assert (refused.status_code, small.status_code) == (413, 413)
    assert fragments[0] == fragments[1]
    assert 'data-status="413"' in fragments[0]


def test_match_command_refuses_input_past_max_bytes_in_the_same_words(tmp_path: object) -> None:
    from pathlib import Path

    from django.core.management import CommandError, call_command

    log = Path(str(tmp_path)) / "app.log"
    log.write_text(_paste(5000))
    out = io.StringIO()
    call_command("match", str(log), "--max-bytes", "5000", "--json", stdout=out)
    assert "matches" in json.loads(out.getvalue())
    with pytest.raises(CommandError, match=r"^The input is larger than the limit of 4\.9\sKB\."):
        call_command("match", str(log), "--max-bytes", "4999", "--json")
