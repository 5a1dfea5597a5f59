"""``LOG_FORMAT=json``: one JSON object per line from Django's loggers and gunicorn's, with
nothing personal in it (docs/reliability.md#r27-paste-privacy): no query string, body or
client address, even where the logger was handed the whole request."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import RequestFactory

from kb.ops.logs import JsonFormatter
from tests.servers import ROOT, Gunicorn, app_env, json_post

SECRET = "AKIAIOSFODNN7EXAMPLE"
CLIENT = "203.0.113.77"


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_app(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the repository with the app's environment plus ``env``."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=app_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_request_handed_to_the_logger_becomes_its_method_and_path_only() -> None:
    request = RequestFactory().get(f"/records/?q={SECRET}", REMOTE_ADDR=CLIENT)
    record = logging.LogRecord(
        "django.request", logging.ERROR, __file__, 1, "boom %s", ("x",), None
    )
    record.request = request
    record.status_code = 500
    out = JsonFormatter().format(record)
    data = json.loads(out)
    assert data["message"] == "boom x"
    assert data["level"] == "ERROR"
    assert data["logger"] == "django.request"
    assert data["status_code"] == 500
    assert (data["method"], data["path"]) == ("GET", "/records/")
    assert "time" in data
    assert SECRET not in out
    assert CLIENT not in out


def test_a_gunicorn_access_line_keeps_no_address_or_query_string() -> None:
    atoms = {"h": CLIENT, "m": "GET", "U": "/records/", "q": f"q={SECRET}", "s": "200"}
    atoms |= {"r": f"GET /records/?q={SECRET} HTTP/1.1", "B": "512", "M": "3", "a": "curl"}
    fmt = '%(h)s "%(r)s" %(s)s'  # an operator's format may name any atom
    record = logging.LogRecord("gunicorn.access", logging.INFO, __file__, 1, fmt, (atoms,), None)
    out = JsonFormatter().format(record)
    data = json.loads(out)
    assert data["message"] == "GET /records/ 200"
    assert (data["method"], data["path"], data["status"], data["bytes"]) == (
        "GET",
        "/records/",
        200,
        512,
    )
    assert SECRET not in out
    assert CLIENT not in out


def test_django_logs_are_json_lines_in_a_real_process() -> None:
    """The settings' LOGGING, as a management command's process configures it."""
    script = (
        "import logging, django; django.setup()\n"
        "from django.test import RequestFactory\n"
        f"r = RequestFactory().get('/records/?q={SECRET}')\n"
        "logging.getLogger('django.request').error('Internal Server Error: %s', r.path,"
        " extra={'status_code': 500, 'request': r})\n"
        "logging.getLogger('kb.curation.tasks').warning('import job %s failed', 7)\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n"
        "    logging.getLogger('kb').exception('multi\\nline')\n"
    )
    done = run_app("-c", script, LOG_FORMAT="json", DEBUG="1")
    assert done.returncode == 0, done.stderr
    logged = lines_of(done.stderr)
    assert [d["logger"] for d in logged] == ["django.request", "kb.curation.tasks", "kb"]
    assert logged[0]["path"] == "/records/"
    assert "ZeroDivisionError" in logged[2]["exc_info"]
    assert SECRET not in done.stderr


def test_an_unknown_log_format_is_refused() -> None:
    done = run_app("manage.py", "check", LOG_FORMAT="xml")
    assert done.returncode != 0
    assert "LOG_FORMAT" in done.stderr


@pytest.mark.django_db(transaction=True)
def test_gunicorn_writes_json_access_and_error_logs(tmp_path: Path) -> None:
    with Gunicorn(workers=1, log_dir=tmp_path, access_format=None, LOG_FORMAT="json") as server:
        server.request("GET", f"/records/?q={SECRET}", headers={"X-Forwarded-For": CLIENT})
        assert json_post(server, "/api/match", {"text": f"key {SECRET}"})[0] == 200
    access = server.access_log.read_text()
    errors = server.errors()
    requests = lines_of(access)  # every line parses
    assert {(d["method"], d["path"]) for d in requests} >= {
        ("GET", "/healthz"),
        ("GET", "/records/"),
        ("POST", "/api/match"),
    }
    assert all(isinstance(d["status"], int) for d in requests)
    booted = lines_of(errors)
    assert any("Booting worker" in d["message"] for d in booted)
    for text in (access, errors):
        assert SECRET not in text
        assert CLIENT not in text
        assert "127.0.0.1" not in text.replace("http://127.0.0.1", "")  # no client address
