"""The scratch app the load test runs against: set-up, gunicorn, and the server's CPU time.

A scratch copy of the app (its own SQLite file under the work folder, or ``--database-url``)
with DEBUG off, trusting one proxy's ``X-Forwarded-For`` and the production rate limit,
served by ``gunicorn -c python:kb.gunicorn_conf`` in its own session so that stopping it
stops every worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def log(msg: str) -> None:
    print(f"[load {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def python(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    """``python ARGS`` in the project root; its stdout, or exit with its stderr's tail."""
    done = subprocess.run(
        [PY, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        shown = " ".join(a if len(a) < 80 else a[:77] + "..." for a in args)
        raise SystemExit(f"{shown} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def last_json(stdout: str) -> Any:
    """The JSON object a child script prints last."""
    return json.loads(stdout.strip().splitlines()[-1])


def manage(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    return python(env, "manage.py", *args, timeout=timeout)


def scratch_env(work: Path, port: int, workers: int, database_url: str | None) -> dict[str, str]:
    """The environment for ``manage.py`` and gunicorn: no inherited ``DJANGO_*`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="kb.settings",
        DATABASE_URL=database_url or f"sqlite:///{work / 'load.sqlite3'}",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        STATIC_ROOT=str(work / "static"),
        KB_MATCHER_CACHE_DIR=str(ROOT / ".cache" / "matcher"),
        # as deployed behind one reverse proxy, with the production rate limit (600 matches
        # per client a minute); wrk sends the X-Forwarded-For the proxy would add
        KB_TRUSTED_PROXY_COUNT="1",
        KB_RATE_LIMIT_PER_MINUTE=os.environ.get("KB_RATE_LIMIT_PER_MINUTE", "600"),
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY=str(workers),
        GUNICORN_ACCESS_LOG=str(work / "access.log"),
        PYTHONUNBUFFERED="1",
    )
    return env


def prepare(env: dict[str, str], dataset: Path) -> float:
    """Migrate, import ``dataset``, collect static files, warm the matcher.

    Returns the import's wall seconds."""
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "createcachetable")
    started = time.monotonic()
    manage(env, "import_records", str(dataset))
    import_seconds = time.monotonic() - started
    manage(env, "collectstatic", "--noinput", "-v0")
    log(manage(env, "warm_matcher").strip())
    return import_seconds


def start_server(
    env: dict[str, str], work: Path, base: str, error_log: IO[str]
) -> subprocess.Popen[bytes]:
    """gunicorn, started in its own session; returns once ``/healthz`` answers 200."""
    server = subprocess.Popen(
        [str(Path(PY).with_name("gunicorn")), "-c", "python:kb.gunicorn_conf", "kb.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=error_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_healthy(server, work, base)
    except BaseException:
        stop_server(server)
        raise
    return server


def wait_healthy(server: subprocess.Popen[bytes], work: Path, base: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise SystemExit(f"server did not start: {(work / 'error.log').read_text()[-3000:]}")
        time.sleep(0.2)


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM to gunicorn's process group (arbiter and workers); SIGKILL after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def csrf_token(base: str) -> str:
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(base + "/", timeout=30).read()
    for cookie in jar:
        if cookie.name == "csrftoken" and cookie.value:
            return cookie.value
    raise SystemExit("no csrftoken cookie from GET /")


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def post_body(url: str, body: bytes, content_type: str, token: str, client: str) -> tuple[int, str]:
    """One request as the wrk script sends it, from ``client``: (status, response text)."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": content_type,
            "X-CSRFToken": token,
            "Cookie": f"csrftoken={token}",
            "HX-Request": "true",
            "X-Forwarded-For": client,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return int(r.status), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def _proc_times(pid: int) -> list[int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return [int(x) for x in fields[11:15]]  # utime, stime, cutime, cstime


def cpu_seconds(master: int) -> float:
    """CPU used by the server so far: the arbiter, its live workers, and (through the
    arbiter's cutime/cstime) every worker already recycled by ``max_requests``."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        total = sum(_proc_times(master))
    except (OSError, ValueError):
        return 0.0
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    for pid in out.split():
        with contextlib.suppress(OSError, ValueError):  # a worker that just exited
            total += sum(_proc_times(int(pid))[:2])
    return total / tick
