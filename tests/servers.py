"""Real gunicorn servers for the multi-process tests (rate limit, concurrency, crash).

Django's test client runs in one process; the bars about several workers sharing one
database (docs/reliability.md#r20-concurrency, #r22-crash-durability, #r26-rate-limit)
need real processes. ``Gunicorn`` starts the app on a
free loopback port against the test database (the same file or PostgreSQL database
pytest-django set up), logs each request with the worker's pid, and is always stopped.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# One key for every process a test session starts: they are hosts of one deployment, which
# shares its SECRET_KEY (sessions, CSRF, the matcher store's MACs all depend on it).
SECRET_KEY = secrets.token_urlsafe(50)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url() -> str:
    """A DATABASE_URL for the database the current tests use (the test database)."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


_static_root: Path | None = None


def static_root() -> Path:
    """Collected static files for DEBUG=0 (manifest storage), once per test session."""
    global _static_root
    if _static_root is None:
        import tempfile

        target = Path(tempfile.mkdtemp(prefix="kb-static-"))
        env = app_env(STATIC_ROOT=str(target))
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=120,
        )
        _static_root = target
    return _static_root


def app_env(**extra: str) -> dict[str, str]:
    """Production-like settings for a subprocess of the app, on the test database."""
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DJANGO_SETTINGS_MODULE="kb.settings",
        DATABASE_URL=database_url(),
        DEBUG="0",
        SECRET_KEY=SECRET_KEY,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        KB_MATCHER_CACHE_DIR=str(settings.KB_MATCHER_CACHE_DIR),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


class Gunicorn:
    """``with Gunicorn(workers=2) as server: server.get("/healthz")``."""

    def __init__(
        self,
        workers: int = 2,
        log_dir: Path | None = None,
        access_format: str | None = '%(p)s "%(r)s" %(s)s',
        **env: str,
    ) -> None:
        self.workers = workers
        self.access_format = access_format
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
        self.access_log = self.log_dir / f"gunicorn-{self.port}-access.log"
        self.error_log = self.log_dir / f"gunicorn-{self.port}-error.log"
        env.setdefault("STATIC_ROOT", str(static_root()))
        self.env = app_env(**env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Gunicorn:
        # The production configuration (kb/gunicorn_conf.py), with test-specific overrides.
        cmd = [
            str(GUNICORN),
            "--config",
            "python:kb.gunicorn_conf",
            "kb.wsgi",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            "--timeout",
            "30",
            "--access-logfile",
            str(self.access_log),
            *(["--access-logformat", self.access_format] if self.access_format else []),
            "--error-logfile",
            str(self.error_log),
            "--no-control-socket",
            "--graceful-timeout",
            "5",
        ]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.error_log.read_text()[-2000:]}")
            try:
                if self.request("GET", "/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"gunicorn did not become healthy: {self.errors()[-2000:]}")

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(  # noqa: S310 - loopback only
            self.base + path, data=body, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def worker_pids(self) -> list[int]:
        """Pids of the workers that served requests (from the access log)."""
        if not self.access_log.exists():
            return []
        pids = []
        for line in self.access_log.read_text().splitlines():
            head = line.split(" ", 1)[0].strip("<>")
            if head.isdigit():
                pids.append(int(head))
        return pids

    def errors(self) -> str:
        return self.error_log.read_text() if self.error_log.exists() else ""

    def kill(self) -> None:
        """``kill -9`` the whole server (master and workers), no chance to clean up."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> Gunicorn:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def json_post(server: Gunicorn, path: str, payload: Any, **headers: str) -> tuple[int, dict, bytes]:
    import json

    return server.request(
        "POST",
        path,
        json.dumps(payload).encode(),
        {"Content-Type": "application/json", **headers},
    )


def matched_ids(server: Gunicorn, text: str) -> list[str]:
    """The record ids ``POST /api/match`` answers for ``text``, best first."""
    import json

    status, _headers, body = json_post(server, "/api/match", {"text": text})
    assert status == 200, body[:500]
    return [m["record_id"] for m in json.loads(body)["matches"]]


def db_worker(*args: str, **env: str) -> subprocess.Popen[bytes]:
    """A real ``manage.py db_worker`` on the test database, sharing the upload directory,
    with the settings' default task backend (the database)."""
    from django.conf import settings

    environ = app_env(KB_IMPORT_DIR=str(settings.KB_IMPORT_DIR), **env)
    environ.pop("KB_TASKS_BACKEND", None)
    cmd = [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--interval", "0.1"]
    return subprocess.Popen([*cmd, *args], cwd=ROOT, env=environ, start_new_session=True)
