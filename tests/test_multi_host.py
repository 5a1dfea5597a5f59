"""Two hosts and a worker, all real processes on one database, driven only over HTTP.

The deployment of docs/deployment.md ("Several hosts"): web servers with their own local
matcher caches, one ``db_worker``, one database (the test database: SQLite here, PostgreSQL
in the suite's PostgreSQL run). A curator uploads a file through host A's admin; the
request only queues it, the worker imports it and builds the matcher, and publishes that
build to the shared store; host B, started afterwards with an empty cache, serves those
records without compiling; an edit saved through host A's admin matches on host B within
the refresh bound.
"""

from __future__ import annotations

import http.cookies
import re
import secrets
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from kb.records.models import ErrorRecord, ImportJob
from tests.curation_support import form_data, make_curator
from tests.factories import encode, make_line
from tests.servers import Gunicorn, db_worker, matched_ids

pytestmark = pytest.mark.django_db(transaction=True)

# The app's log lines (where a matcher came from) in each server's error log.
LOGS = {"GUNICORN_CMD_ARGS": "--capture-output"}
TOKEN_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


class Browser:
    """Cookies and CSRF tokens by hand: the servers run with DEBUG=0, whose cookies are
    marked Secure, which a cookie jar would not send over loopback HTTP."""

    def __init__(self, server: Gunicorn) -> None:
        self.server = server
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None, **headers: str) -> Any:
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        status, head, content = self.server.request(method, path, body, headers, timeout=30)
        for name, value in head.items():
            if name.lower() == "set-cookie":
                jar = http.cookies.SimpleCookie(value)
                self.cookies.update({k: m.value for k, m in jar.items()})
        return status, head, content

    def token(self, path: str) -> str:
        status, _head, content = self.request("GET", path)
        assert status == 200, content[:500]
        found = TOKEN_RE.search(content)
        assert found, f"no CSRF token on {path}"
        return found.group(1).decode()

    # Redirects are followed (urllib), so a form's answer is the page it redirects to.
    def post_form(self, path: str, data: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        data = {"csrfmiddlewaretoken": self.token(path), **data}
        body = urllib.parse.urlencode(data, doseq=True).encode()
        return self.request(
            "POST", path, body, **{"Content-Type": "application/x-www-form-urlencoded"}
        )

    def post_file(self, path: str, field: str, name: str, content: bytes) -> Any:
        boundary = secrets.token_hex(12)
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"'
            f"\r\n\r\n{self.token(path)}\r\n".encode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; '
            f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode(),
            content,
            f"\r\n--{boundary}--\r\n".encode(),
        ]
        return self.request(
            "POST",
            path,
            b"".join(parts),
            **{"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )


def wait_for(check: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())


def test_upload_on_host_a_imports_in_the_worker_host_b_serves_without_compiling_edits_cross(
    tmp_path: Path,
) -> None:
    curator = make_curator("ops")
    # the test process signs the curator's session: the servers share its key
    web_env = {
        "KB_IMPORT_DIR": str(settings.KB_IMPORT_DIR),
        "SECRET_KEY": settings.SECRET_KEY,
        **LOGS,
    }
    lines = [make_line() for _ in range(40)]
    probe = lines[0]["record"]
    worker: subprocess.Popen[bytes] | None = None
    try:
        with Gunicorn(
            workers=2, log_dir=tmp_path, KB_MATCHER_CACHE_DIR=str(tmp_path / "a"), **web_env
        ) as host_a:
            admin = Browser(host_a)
            # A curator's session (a real one, in the shared database), logged in once.
            client = Client()
            client.force_login(curator)
            admin.cookies[settings.SESSION_COOKIE_NAME] = client.cookies[
                settings.SESSION_COOKIE_NAME
            ].value

            status, _head, body = admin.post_file(
                "/admin/kb/importjob/upload/", "file", "records.jsonl", b"".join(encode(*lines))
            )
            # The request answered (and its redirect to the job's page) with the job queued:
            # nothing of the file was imported by it. The worker starts only now, so this
            # holds whatever the timing.
            assert status == 200, body[:500]
            job = ImportJob.objects.latest("id")
            assert b"(Queued)" in body
            assert job.state == ImportJob.State.QUEUED
            assert ErrorRecord.objects.count() == 0
            worker = db_worker(
                KB_MATCHER_CACHE_DIR=str(tmp_path / "worker-cache"),
                SECRET_KEY=web_env["SECRET_KEY"],  # one deployment: the store's MACs need it
            )

            # The worker imports it, and pages keep answering meanwhile.
            def done() -> bool:
                assert host_a.request("GET", "/healthz")[0] == 200
                job.refresh_from_db()
                return job.state in {ImportJob.State.DONE, ImportJob.State.FAILED}

            assert wait_for(done, 120), f"the worker did not finish the job: {job.state}"
            assert job.state == ImportJob.State.DONE, job.error
            assert ErrorRecord.objects.count() == len(lines)
            # ... and builds the matcher before its task ends, publishing the build to the
            # shared store.
            from django_tasks_db.models import DBTaskResult

            assert wait_for(
                lambda: DBTaskResult.objects.filter(
                    task_path__endswith="run_import", status="SUCCESSFUL"
                ).exists(),
                120,
            )

            with Gunicorn(
                workers=1, log_dir=tmp_path, KB_MATCHER_CACHE_DIR=str(tmp_path / "b"), **web_env
            ) as host_b:
                line = "Backfill progress for vnode 7 not found, "
                line += "backfill_state not initialized properly"
                assert probe["id"] in matched_ids(host_b, f"ERROR {line}")
                assert "matcher loaded from store" in host_b.errors()
                assert "matcher published to store" not in host_b.errors()

                # A curator's edit through host A's admin matches on host B within 2 s.
                record = ErrorRecord.objects.get(pk=lines[1]["record"]["id"])
                reworded = "Quokka gateway 12 refused the handshake"
                status, _head, body = admin.post_form(
                    f"/admin/kb/errorrecord/{record.pk}/change/",
                    form_data(
                        record,
                        error_message="Quokka gateway {} refused the handshake",
                        message_pattern="Quokka gateway (.+?) refused the handshake",
                        change_reason="cross-host test",
                    ),
                )
                assert status == 200, body[:2000]  # the change list, after the redirect
                record.refresh_from_db()
                assert record.message_pattern.startswith("Quokka")
                saved = time.monotonic()
                assert wait_for(lambda: record.pk in matched_ids(host_b, reworded), 2.0), (
                    f"host B did not match the edit within 2 s ({time.monotonic() - saved:.1f} s)"
                )
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
