"""The cache is an optimisation, never a dependency (kb/ops/caching.py).

Real parts broken on purpose: a database made by ``manage.py migrate`` alone and served by
real gunicorn processes, its cache table dropped while they serve; a real ``redis-server``
shared by two servers (the match rate limit holds across them), then killed. Every page
and the admin answer without a 500 throughout.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection
from django.test import Client

from tests.factories import SEED, encode, import_lines, make_line
from tests.servers import ROOT, Gunicorn, app_env, free_port, json_post

PASSWORD = "cache-test-Password-1"
LINES = [make_line() for _ in range(3)]
RECORD = LINES[0]["record"]["id"]
TAG = SEED["record"]["tags"][0]
PAGES = [
    "/",
    "/records/",
    "/records/?q=error",
    f"/records/{RECORD}/",
    "/tags/",
    f"/tags/{TAG}/",
    "/healthz",
    "/api/records",
    f"/api/records/{RECORD}",
    "/api/tags",
    f"/api/tags/{TAG}",
]
ADMIN_PAGES = [
    "/admin/",
    "/admin/kb/errorrecord/",
    "/admin/kb/errorrecord/?q=error",
    f"/admin/kb/errorrecord/{RECORD}/change/",
    f"/admin/kb/errorrecord/{RECORD}/history/",
    "/admin/kb/tag/",
    "/admin/kb/importjob/",
    "/admin/kb/importjob/upload/",
]


def manage(db: Path, *args: str, **env: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=app_env(DATABASE_URL=f"sqlite:///{db}", **env),
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.fixture
def migrate_only(migrated_db: Path, tmp_path: Path) -> Path:
    """A database made by ``migrate`` alone (no ``createcachetable``), with a few records
    and a curator: data, not set-up."""
    db = tmp_path / "kb.sqlite3"
    shutil.copyfile(migrated_db, db)
    data = tmp_path / "records.jsonl"
    data.write_bytes(b"".join(encode(*LINES)))
    manage(db, "import_records", str(data))
    manage(db, "create_curator", "curator", "--password-from-env", "KB_PW", KB_PW=PASSWORD)
    return db


class _KeepRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECTS = urllib.request.build_opener(_KeepRedirects)


class Session:
    """A logged-in admin session against a real server (cookies kept by hand: they are
    ``Secure`` with DEBUG off, which a cookie jar would not send over loopback HTTP)."""

    def __init__(self, server: Gunicorn) -> None:
        self.server = server
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(  # noqa: S310 - loopback only
            self.server.base + path, data=body, method=method, headers=headers
        )
        try:
            with _NO_REDIRECTS.open(req, timeout=10) as resp:
                status, got, content = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:  # 3xx included: the redirect sets the cookie
            status, got, content = err.code, err.headers, err.read()
        for header in got.get_all("Set-Cookie") or []:
            for name, value in re.findall(r"^(csrftoken|sessionid)=([^;]*)", header):
                self.cookies[name] = value
        return status, content

    def login(self) -> None:
        from urllib.parse import urlencode

        status, page = self.request("GET", "/admin/login/")
        assert status == 200
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = {"csrfmiddlewaretoken": token.decode(), "username": "curator"}
        form |= {"password": PASSWORD, "next": "/admin/"}
        status, _ = self.request("POST", "/admin/login/", urlencode(form).encode())
        assert status == 302, "login failed"
        assert "sessionid" in self.cookies


def crawl(server: Gunicorn, session: Session) -> dict[str, int]:
    """Every page, the admin and a match: path -> status."""
    statuses = {path: server.request("GET", path)[0] for path in PAGES}
    statuses |= {path: session.request("GET", path)[0] for path in ADMIN_PAGES}
    statuses["POST /api/match"] = json_post(server, "/api/match", {"text": "boom"})[0]
    return statuses


def assert_all_answer(statuses: dict[str, int]) -> None:
    broken = {path: status for path, status in statuses.items() if status >= 500}
    assert not broken, broken
    assert statuses["/admin/kb/errorrecord/"] == 200
    assert statuses[f"/tags/{TAG}/"] == 200


@pytest.mark.django_db
def test_migrate_alone_serves_every_page_and_survives_its_cache_table_dropped(
    migrate_only: Path,
) -> None:
    tables = {r[0] for r in sqlite3.connect(migrate_only).execute("SELECT name FROM sqlite_master")}
    assert "kb_cache" in tables  # migrate made it: no separate set-up step
    with Gunicorn(workers=2, DATABASE_URL=f"sqlite:///{migrate_only}") as server:
        session = Session(server)
        session.login()
        assert_all_answer(crawl(server, session))

        with sqlite3.connect(migrate_only) as db:  # broken on purpose, while serving
            db.execute("DROP TABLE kb_cache")
        first = crawl(server, session)
        again = crawl(server, session)  # each worker now knows, and rests from it
        assert_all_answer(first)
        assert_all_answer(again)


@pytest.mark.django_db(transaction=True)
def test_a_dropped_cache_table_is_uncached_work_and_one_log_line(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    from kb.browse.selectors import per_revision

    calls: list[int] = []
    assert per_revision("t", 1, lambda: calls.append(1) or 7) == 7
    assert per_revision("t", 1, lambda: calls.append(1) or 7) == 7
    assert len(calls) == 1  # cached while the table is there
    with connection.schema_editor() as editor:
        editor.execute("DROP TABLE kb_cache")
    try:
        with caplog.at_level(logging.WARNING, logger="kb.ops.caching"):
            for _ in range(3):
                assert per_revision("t", 2, lambda: calls.append(1) or 8) == 8
                assert client.get("/tags/").status_code == 200
                match = client.post("/api/match", {"text": "x"}, "application/json")
                assert match.status_code == 200
        assert len(calls) == 4  # computed every time: uncached, not failed
        lines = [r for r in caplog.records if r.name == "kb.ops.caching"]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert "unavailable" in lines[0].getMessage()
    finally:
        call_command("createcachetable", verbosity=0)


# --- Redis ---------------------------------------------------------------------------------


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real ``redis-server`` on a free loopback port, no persistence; always stopped."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        pytest.skip("redis-server is not installed (.ci/run installs Debian's)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield url, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def redis_keys(url: str, pattern: str) -> list[bytes]:
    import redis

    return list(redis.Redis.from_url(url).scan_iter(pattern))


@pytest.mark.django_db(transaction=True)
def test_redis_counts_the_match_limit_across_two_servers_and_its_death_is_no_500(
    redis_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, proc = redis_server
    import_lines(*LINES)
    limit = 6
    env = {"CACHE_URL": url, "KB_RATE_LIMIT_PER_MINUTE": str(limit)}
    env["KB_TRUSTED_PROXY_COUNT"] = "1"  # the client is who X-Forwarded-For names
    with Gunicorn(workers=2, **env) as one, Gunicorn(workers=2, **env) as two:
        # The limit counts per wall-clock minute: start well inside one, so all of this
        # test's matches fall in the same window.
        while time.time() % 60 > 40:
            time.sleep(0.5)
        client = {"X-Forwarded-For": "10.0.0.1"}
        servers = [one, two] * 4
        answers = [json_post(s, "/api/match", {"text": "boom"}, **client)[0] for s in servers]
        # One budget for both servers: the seventh match, wherever it lands, is refused.
        assert answers[:limit] == [200] * limit, answers
        assert answers[limit:] == [429, 429], answers
        assert redis_keys(url, "*kb:rl:match:*")  # counted in Redis, not in the database

        proc.kill()  # Redis dies while both serve
        proc.wait(timeout=10)
        for server in (one, two):
            for path in ["/", "/records/", "/tags/", f"/tags/{TAG}/", "/healthz"]:
                assert server.request("GET", path)[0] == 200, path
            other = {"X-Forwarded-For": "10.0.0.2"}
            status, _, body = json_post(server, "/api/match", {"text": "boom"}, **other)
            assert status == 200, body[:500]  # no counter: let through, never a 500
            assert json.loads(body)


def test_an_unreachable_redis_is_a_miss_and_one_log_line(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()  # nothing listens there: a Redis that is down
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "kb.ops.caching.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        },
    }
    cache = caches["default"]
    with caplog.at_level(logging.WARNING, logger="kb.ops.caching"):
        for _ in range(5):
            cache.set("k", 1)
            assert cache.get("k", "missing") == "missing"
            assert cache.add("k", 1) is False
            assert cache.incr("n", 3) == 3
            assert cache.get_or_set("g", 5) == 5
    lines = [r for r in caplog.records if r.name == "kb.ops.caching"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
