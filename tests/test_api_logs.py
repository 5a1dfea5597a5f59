"""Whole CI logs through ``POST /api/match``: a log sent as the body (or a multipart ``log``
file) is held to ``KB_MAX_LOG_BYTES``, the size ``manage.py match`` reads, not to the paste
box's limit; gzip-compressed logs are read decompressed, by ``Content-Encoding: gzip`` or by
their magic bytes, and a gzip bomb is refused with 413 after ``KB_MAX_LOG_BYTES`` of output
(docs/reliability.md#r10-size-limits). The live-server round trip with
``contrib/kb_match.py`` is in ``tests/test_match_cli.py``.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from tests.factories import SEED, import_lines

pytestmark = pytest.mark.django_db

SEED_ID = "c36bebe8cdedec02"
SEED_LINE = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
NOISE = "2026-11-30T03:12:44Z INFO worker heartbeat ok id=42 step=build/compile shard=7\n"


@pytest.fixture(autouse=True)
def _seed_and_no_rate_limit(settings: Any) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    assert import_lines(SEED).rejected == 0


def ci_log(size: int) -> str:
    """A log of about ``size`` bytes whose known error is near its end, past any paste limit."""
    head = NOISE * (size // len(NOISE))
    return f"{head}{SEED_LINE}\n{NOISE}"


def matched(response: Any) -> list[tuple[str, int]]:
    assert response.status_code == 200, response.content[:500]
    return [(m["record_id"], m["line"]) for m in response.json()["matches"]]


def post(client: Client, body: bytes, content_type: str, **headers: str) -> Any:
    return client.generic("POST", "/api/match", body, content_type=content_type, headers=headers)


def test_a_log_body_past_the_paste_limit_is_matched_whole(client: Client) -> None:
    text = ci_log(2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    line = text.count("\n", 0, text.index(SEED_LINE)) + 1
    for content_type in ("text/plain; charset=utf-8", "application/octet-stream"):
        assert matched(post(client, text.encode(), content_type)) == [(SEED_ID, line)]


def test_a_paste_in_json_keeps_the_paste_limit(client: Client) -> None:
    body = json.dumps({"text": ci_log(settings.KB_MAX_PASTE_BYTES + 1024)})
    response = client.post("/api/match", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["max_bytes"] == settings.KB_MAX_PASTE_BYTES


def test_gzip_logs_answer_as_the_plain_log_does(client: Client) -> None:
    text = ci_log(600 * 1024)
    packed = gzip.compress(text.encode())
    plain = matched(post(client, text.encode(), "text/plain"))
    assert plain
    # Declared by its encoding, found by its magic bytes, or a .gz file uploaded.
    assert matched(post(client, packed, "text/plain", content_encoding="gzip")) == plain
    assert matched(post(client, packed, "application/octet-stream")) == plain
    assert matched(post(client, packed, "application/gzip")) == plain
    upload = SimpleUploadedFile("build.log.gz", packed, content_type="application/gzip")
    assert matched(client.post("/api/match", {"log": upload})) == plain
    # Two gzip members one after the other read as one log, as gunzip reads them.
    half = len(text) // 2
    members = gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode())
    assert matched(post(client, members, "application/octet-stream")) == plain


def test_a_gzip_bomb_is_refused_politely(client: Client, settings: Any) -> None:
    settings.KB_MAX_LOG_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100 * 1024  # small on the wire
    for body_type, encoding in (("application/octet-stream", ""), ("text/plain", "gzip")):
        headers = {"content_encoding": encoding} if encoding else {}
        response = post(client, bomb, body_type, **headers)
        assert response.status_code == 413, response.content[:300]
        assert response.json()["max_bytes"] == settings.KB_MAX_LOG_BYTES
    upload = SimpleUploadedFile("bomb.log.gz", bomb, content_type="application/gzip")
    response = client.post("/api/match", {"log": upload})
    assert response.status_code == 413
    assert response.json()["max_bytes"] == settings.KB_MAX_LOG_BYTES


def test_a_log_body_past_the_log_limit_is_413(client: Client, settings: Any) -> None:
    settings.KB_MAX_LOG_BYTES = 400 * 1024  # above the paste limit: the log's limit holds
    response = post(client, ci_log(500 * 1024).encode(), "text/plain")
    assert response.status_code == 413
    payload = response.json()
    assert payload["max_bytes"] == settings.KB_MAX_LOG_BYTES
    assert "log" in payload["detail"]


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "status"),
    [
        (b"\x1f\x8b\x08\x00broken", "application/octet-stream", "", 400),
        (gzip.compress(b"x" * 5000)[:-12], "application/octet-stream", "", 400),  # cut off
        (b"plain text", "text/plain", "gzip", 400),  # says gzip, is not
        (b"plain text", "text/plain", "br", 415),
        (json.dumps({"text": SEED_LINE}).encode(), "application/json", "gzip", 415),
    ],
    ids=["damaged", "cut-off", "not-gzip", "brotli", "json-gzip"],
)
def test_bad_compressed_bodies_are_told_why(
    client: Client, body: bytes, content_type: str, encoding: str, status: int
) -> None:
    headers = {"content_encoding": encoding} if encoding else {}
    response = post(client, body, content_type, **headers)
    assert response.status_code == status
    assert response.json()["detail"]


def test_the_paste_page_reads_a_gz_upload_as_its_log(client: Client) -> None:
    packed = gzip.compress(ci_log(64 * 1024).encode())
    upload = SimpleUploadedFile("build.log.gz", packed, content_type="application/gzip")
    response = client.post("/match/", {"log": upload, "text": ""}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert f"/records/{SEED_ID}/" in response.content.decode()


def test_the_match_command_reads_a_gz_file_as_the_api_does(client: Client, tmp_path: Path) -> None:
    text = ci_log(600 * 1024)
    packed = tmp_path / "build.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    out = io.StringIO()
    call_command("match", str(packed), "--json", stdout=out)
    from_command = [(m["record_id"], m["line"]) for m in json.loads(out.getvalue())["matches"]]
    assert from_command == matched(post(client, packed.read_bytes(), "application/octet-stream"))
    damaged = tmp_path / "damaged.log.gz"
    damaged.write_bytes(packed.read_bytes()[:-100])
    with pytest.raises(CommandError, match="cut short"):
        call_command("match", str(damaged), "--json", stdout=io.StringIO())
