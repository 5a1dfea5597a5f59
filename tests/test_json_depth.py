"""A JSON body nested past ``KB_MAX_JSON_DEPTH`` is a 400 on every path, before anything
parses it (docs/reliability.md#r35-costs-and-proposals): ``[`` repeated made Python's json
parser raise RecursionError, a 500 on ``POST /api/match``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from kb.http import json_depth
from tests.factories import make_record


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b"", 0),
        (b'"text"', 0),
        (b"{}", 1),
        (b'{"text": "x"}', 1),
        (b'{"a": [1, {"b": [[]]}]}', 5),
        (b'{"text": "[[[[{{{{"}', 1),  # brackets in a string do not count
        (b'{"text": "quote \\" [[[ still in the string"}', 1),
        (b'{"text": "backslash \\\\", "n": [[1]]}', 3),  # the string ended at \\"
        (b'["]", ["}"]]', 2),
        (b"[" * 100_000, 100_000),
        (b'{"a":' * 50_000, 50_000),
        (b"[]" * 100_000, 1),
        ("[\u00e9]".encode(), 1),
    ],
)
def test_json_depth(body: bytes, depth: int) -> None:
    assert json_depth(body) == depth


def nested(levels: int) -> dict[str, Any]:
    """A match request whose extra key nests ``levels`` deep in all."""
    value: Any = 1
    for _ in range(levels - 1):
        value = [value]
    return {"text": "ERROR Widget frobnication failed", "extra": value}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/api/match",
        "/api/reports",
        "/api/feedback",
        "/api/proposals",
        "/api/records",
        "/match/",
        "/report/",
        "/healthz",
    ],
)
@pytest.mark.parametrize("body", ["[" * 100_000, '{"text":' * 50_000, "[" * 33])
def test_a_body_nested_too_deep_is_a_400_on_every_path(settings: Any, path: str, body: str) -> None:
    settings.KB_MAX_JSON_DEPTH = 32
    response = Client().post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    if path.startswith("/api/"):
        data = response.json()
        assert data["status"] == 400
        assert "deeper than 32 levels" in data["detail"]
    else:
        assert "deeper than 32 levels" in response.content.decode()


@pytest.mark.django_db
def test_the_limit_is_the_setting_and_strings_do_not_count(settings: Any) -> None:
    settings.KB_MAX_JSON_DEPTH = 32
    client = Client()

    def match(data: Any, content_type: str = "application/json") -> int:
        return client.post("/api/match", data, content_type=content_type).status_code

    assert match(json.dumps(nested(32))) == 200
    assert match(json.dumps(nested(33))) == 400
    assert match(json.dumps({"text": "[" * 100_000})) == 200  # text, however many brackets
    assert match("[" * 100_000, "text/plain") == 200  # a plain-text paste is no JSON
    settings.KB_MAX_JSON_DEPTH = 40
    assert match(json.dumps(nested(33))) == 200
    record = make_record()
    vote = {"record_id": record.pk, "verdict": "fixed", "pad": [[[[]]]]}
    assert client.post("/api/feedback", vote, content_type="application/json").status_code == 201
