"""``manage.py run_with_worker -- WEB COMMAND…``: the web server and the task worker as one
command (``make serve``; ``make run`` starts the ``Procfile`` under honcho instead).

Imports and matcher builds run in ``manage.py db_worker`` (``settings.TASKS``), so a web
server alone would leave uploads queued for ever. This starts both as child processes,
each in its own process group, and stops both together: Ctrl-C (or ``SIGTERM``) is
forwarded once to each group, so the worker finishes its current batch and exits as on a
single Ctrl-C rather than being forced by a second signal, and when either child exits the
other is stopped too, with the first one's exit status. Production runs them as separate
units instead (docs/deployment.md), where each restarts on its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

MANAGE = Path(__file__).resolve().parents[3] / "manage.py"
# How long each child may take to stop after the signal before it is killed.
GRACE_SECONDS = 15.0


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to stop
        os.killpg(proc.pid, sig)


class Command(BaseCommand):
    help = "Run a web server command and the task worker (db_worker) until either stops."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("web", nargs="+", help="The web server command, after --.")
        parser.add_argument(
            "--worker-arg",
            action="append",
            default=[],
            help="An extra argument for db_worker (repeatable), e.g. --worker-arg=--reload.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        worker_cmd = [sys.executable, str(MANAGE), "db_worker", *options["worker_arg"]]
        procs = {
            "worker": subprocess.Popen(worker_cmd, start_new_session=True),
            "web": subprocess.Popen(options["web"], start_new_session=True),
        }
        stopping: list[int] = []

        def forward(signum: int, frame: FrameType | None) -> None:
            if not stopping:  # once: a second signal to db_worker would cut its task short
                stopping.append(signum)
                for proc in procs.values():
                    _signal_group(proc, signal.SIGTERM)

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            first = self._wait_first(procs)
            if not stopping:
                self.stderr.write(f"{first} stopped; stopping the other process")
                forward(signal.SIGTERM, None)
            self._reap(procs)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        code = procs[first].returncode
        if not stopping and code:
            raise CommandError(f"{first} exited with status {code}", returncode=code)

    @staticmethod
    def _wait_first(procs: dict[str, subprocess.Popen[bytes]]) -> str:
        while True:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    return name
            time.sleep(0.2)

    @staticmethod
    def _reap(procs: dict[str, subprocess.Popen[bytes]]) -> None:
        deadline = time.monotonic() + GRACE_SECONDS
        for proc in procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
