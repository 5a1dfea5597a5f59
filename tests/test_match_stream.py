"""``manage.py match`` on a log past ``KB_MATCH_WHOLE_BYTES``: read in blocks (a gzip log
decompressed as a stream) and matched from the lines that matter, with the JSON of reading
it whole, its counts and first/last lines included."""

from __future__ import annotations

import gzip
import io
import json
from html import escape as html_escape
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import override_settings

from kb.engine import candidates
from kb.engine.normalise import _structure
from tests.engine.envelopes import MIXED_KINDS, mixed_line
from tests.factories import SEED, import_lines

pytestmark = pytest.mark.django_db

SEED_ID = "c36bebe8cdedec02"
MESSAGE = "Backfill progress for vnode {} not found, backfill_state not initialized properly"


@pytest.fixture
def seed() -> None:
    assert import_lines(SEED).rejected == 0


def _log(lines: int, quiet: int = 30_000) -> tuple[str, list[int]]:
    """Runs of plain, kubectl, journald and JSON lines, after the first ``quiet`` an error
    line in 100 (the seed record's message); the 1-based lines of the errors."""
    out: list[str] = []
    errors: list[int] = []
    for i in range(lines):
        kind = MIXED_KINDS[(i // 700) % 4]
        if i % 100 == 50 and i >= quiet:
            level, msg = "ERROR", MESSAGE.format(i)
            errors.append(i + 1)
        else:
            level, msg = "INFO", f"heartbeat ok id={i} shard rebalanced in zone eu-west"
        out.append(mixed_line(kind, i, level, msg))
    return "\n".join(out) + "\n", errors


def _json(path: Path) -> dict:
    out = io.StringIO()
    call_command("match", str(path), "--json", stdout=out)
    data = json.loads(out.getvalue())
    data.pop("elapsed_ms")
    return data


@pytest.mark.usefixtures("seed")
def test_a_log_read_in_blocks_prints_the_json_of_reading_it_whole(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(candidates, "CONFIRM_BUDGET_S", 600.0)
    text, errors = _log(60_000)
    assert len(text) > _structure.BIG_TEXT  # a whole log to the normaliser
    path = tmp_path / "big.log"
    path.write_text(text)
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    with override_settings(KB_MAX_LOG_BYTES=len(text) + 1):
        whole = _json(path)  # under KB_MATCH_WHOLE_BYTES: read whole
        with override_settings(KB_MATCH_WHOLE_BYTES=256 * 1024):
            blocks = _json(path)
            gz_blocks = _json(gz)
    assert blocks == whole
    assert gz_blocks == whole
    group = next(g for g in blocks["groups"] if g["record_id"] == SEED_ID)
    assert (group["count"], group["first_line"], group["last_line"]) == (
        len(errors),
        errors[0],
        errors[-1],
    )
    first = blocks["matches"][0]
    assert first["record_id"] == SEED_ID
    line = text.splitlines()[first["line"] - 1]
    assert text[first["span"][0] : first["span"][1]] == first["text"]
    assert first["text"] in line


@pytest.mark.usefixtures("seed")
def test_a_log_body_read_in_blocks_answers_the_json_of_reading_it_whole(
    client, monkeypatch
) -> None:
    """``POST /api/match`` with a log as the body, plain and gzip-compressed: read in blocks
    past ``KB_MATCH_WHOLE_BYTES``, the same answer as read whole."""
    monkeypatch.setattr(candidates, "CONFIRM_BUDGET_S", 600.0)
    text, errors = _log(60_000)
    body = text.encode()

    def post(data: bytes, **headers: str) -> dict:
        response = client.post(
            "/api/match", data=data, content_type="application/octet-stream", **headers
        )
        assert response.status_code == 200, response.content[:300]
        got = response.json()
        got.pop("elapsed_ms")
        return got

    with override_settings(KB_MAX_LOG_BYTES=len(body) + 1):
        whole = post(body)
        with override_settings(KB_MATCH_WHOLE_BYTES=256 * 1024):
            assert post(body) == whole
            assert post(gzip.compress(body), HTTP_CONTENT_ENCODING="gzip") == whole
            damaged = gzip.compress(body)[: len(body) // 20]
            response = client.post("/api/match", data=damaged, content_type="application/gzip")
            assert response.status_code == 400
    group = next(g for g in whole["groups"] if g["record_id"] == SEED_ID)
    assert group["count"] == len(errors)
    first = whole["matches"][0]
    assert text[first["span"][0] : first["span"][1]] == first["text"]


@pytest.mark.usefixtures("seed")
def test_an_uploaded_log_read_in_blocks_shows_the_cards_of_reading_it_whole(
    client, monkeypatch
) -> None:
    """The paste page's log upload, past ``KB_MATCH_WHOLE_BYTES``: spooled to a temporary
    file, read back in blocks and matched from its excerpt; the card quotes the log's own
    line around the match, as when read whole."""
    monkeypatch.setattr(candidates, "CONFIRM_BUDGET_S", 600.0)
    text, errors = _log(60_000)
    line = text.splitlines()[errors[0] - 1]

    def page() -> str:
        upload = SimpleUploadedFile("big.log", text.encode(), content_type="text/plain")
        response = client.post("/match/", {"text": "", "log": upload})
        assert response.status_code == 200
        return response.content.decode()

    with override_settings(KB_MAX_LOG_BYTES=len(text) + 1, KB_MAX_UPLOAD_BYTES=len(text) * 2):
        whole = page()
        with override_settings(KB_MATCH_WHOLE_BYTES=256 * 1024):
            blocks = page()
    body = "Backfill progress for vnode"
    before, after = line.split(body, 1)
    for html in (whole, blocks):
        assert "1 known error found" in html
        card = html[html.index('<p class="matched-line"') :]
        card = card[: card.index("</p>")]
        # the card's line, cut from the log's own offsets around the match
        assert card.startswith(f'<p class="matched-line" aria-label="Line {errors[0]} of')
        assert html_escape(before) in card
        assert html_escape(after.split(" ", 1)[1]) in card
