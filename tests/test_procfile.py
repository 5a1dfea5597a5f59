"""``make run`` is the Procfile under honcho: the web server and the task worker start
together, and one Ctrl-C (SIGINT to the terminal's process group) stops both and leaves
no process behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from honcho.environ import parse_procfile

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
HONCHO = Path(sys.executable).with_name("honcho")


def _procfile() -> dict[str, str]:
    return dict(parse_procfile((ROOT / "Procfile").read_text()).processes)


def test_the_procfile_names_the_web_server_first_and_the_worker() -> None:
    processes = _procfile()
    # honcho gives the first process type the port `make run` passes: it must be web
    assert list(processes) == ["web", "worker"]
    assert "manage.py runserver ${HOST:-127.0.0.1}:${PORT:-8000}" in processes["web"]
    # the worker under run_with_worker, which starts db_worker again if it exits: honcho
    # stops every process when one exits (docs/reliability.md#r31-locked-database)
    assert "manage.py run_with_worker" in processes["worker"]
    assert "--" not in processes["worker"].split()  # no web command: the worker alone
    run = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "honcho start -f Procfile -p $(PORT)" in run


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc), whatever session it started."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited while being read
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def test_honcho_starts_web_and_worker_and_one_interrupt_stops_both(
    migrated_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "run.sqlite3"
    shutil.copy(migrated_db, db)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DATABASE_URL=f"sqlite:///{db}",
        HOST="127.0.0.1",
        PYTHONUNBUFFERED="1",
        PATH=f"{HONCHO.parent}:{env.get('PATH', '')}",
    )
    log = tmp_path / "honcho.log"
    below: set[int] = set()
    with log.open("wb") as out:
        honcho = subprocess.Popen(
            [str(HONCHO), "start", "-f", "Procfile", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as a terminal's foreground job
        )
    try:
        deadline = time.monotonic() + 90
        while not (
            _get(f"http://127.0.0.1:{port}/healthz") == 200 and "Starting worker" in log.read_text()
        ):
            assert honcho.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        assert _get(f"http://127.0.0.1:{port}/") == 200
        below = _descendants(honcho.pid)
        commands = " ".join(Path(f"/proc/{pid}/cmdline").read_text() for pid in below)
        assert "runserver" in commands
        assert "db_worker" in commands

        os.killpg(honcho.pid, signal.SIGINT)  # what one Ctrl-C sends
        honcho.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [pid for pid in below if _alive(pid)] == []
        assert "SIGINT received" in log.read_text()
        assert _get(f"http://127.0.0.1:{port}/healthz") == 0
    finally:
        if honcho.poll() is None:
            os.killpg(honcho.pid, signal.SIGKILL)
            honcho.wait()
        for pid in below:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
