"""``manage.py run_with_worker [-- WEB COMMAND…]``: the web server and the task worker as
one command (``make serve``), or the task worker alone (the ``Procfile``'s worker line,
under honcho for ``make run``), each restarted when it exits.

Imports and matcher builds run in ``manage.py db_worker`` (``settings.TASKS``), so a web
server alone would leave uploads queued for ever. This starts each as a child process in
its own process group and keeps it running: a child that exits, whatever the reason, is
started again after a backoff (``kb.ops.retry.backoff``: doubling from a second up to
``MAX_RESTART_SECONDS``, from the start again once it had run ``STABLE_SECONDS``), and the other
child is left alone: a crashed worker never takes the site down, a crashed web server never
stops queued imports. Under honcho, which stops every process when one exits, the worker's
line runs this command without a web server so that a worker crash is not an exit.

Ctrl-C (or ``SIGTERM``) is forwarded once to each child's group, so the worker finishes its
current batch and exits as on a single Ctrl-C rather than being forced by a second signal;
then this command exits. Production runs them as separate systemd units instead
(docs/deployment.md), where ``Restart=always`` does the same.
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

from django.core.management.base import BaseCommand, CommandParser

from kb.ops.retry import backoff

MANAGE = Path(__file__).resolve().parents[4] / "manage.py"
# How long each child may take to stop after the signal before it is killed.
GRACE_SECONDS = 15.0
# A child that ran this long before it exited was healthy: its next restart waits the least.
STABLE_SECONDS = 60.0
MAX_RESTART_SECONDS = 30.0
POLL_SECONDS = 0.2


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to stop
        os.killpg(proc.pid, sig)


class Child:
    """One supervised command: its process while it runs, when to start it again after."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.argv = argv
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.failures = 0  # exits in a row, each after less than STABLE_SECONDS of running
        self.start_at = 0.0

    def start(self) -> int:
        """Start the command; its pid."""
        self.proc = subprocess.Popen(self.argv, start_new_session=True)
        self.started = time.monotonic()
        return self.proc.pid

    def exited(self) -> int | None:
        """The exit status if the process has just exited (and forget it), else ``None``."""
        if self.proc is None or self.proc.poll() is None:
            return None
        code = self.proc.returncode
        now = time.monotonic()
        self.failures = 1 if now - self.started >= STABLE_SECONDS else self.failures + 1
        self.start_at = now + backoff(self.failures, 1.0, MAX_RESTART_SECONDS)
        self.proc = None
        return code


class Command(BaseCommand):
    help = (
        "Run the task worker (db_worker) and, when given after --, a web server command; "
        "each is restarted when it exits, until Ctrl-C or SIGTERM."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "web", nargs="*", help="The web server command, after --; none: the worker alone."
        )
        parser.add_argument(
            "--worker-arg",
            action="append",
            default=[],
            help="An extra argument for db_worker (repeatable), e.g. --worker-arg=--reload.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        worker_cmd = [sys.executable, str(MANAGE), "db_worker", *options["worker_arg"]]
        children = [Child("worker", worker_cmd)]
        if options["web"]:
            children.append(Child("web", options["web"]))
        stopping: list[int] = []

        def forward(signum: int, frame: FrameType | None) -> None:
            if not stopping:  # once: a second signal to db_worker would cut its task short
                stopping.append(signum)
                for child in children:
                    if child.proc is not None:
                        _signal_group(child.proc, signal.SIGTERM)

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._supervise(children, stopping)
        finally:
            forward(signal.SIGTERM, None)  # after an error here too: leave no child behind
            self._reap(children)
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _supervise(self, children: list[Child], stopping: list[int]) -> None:
        while not stopping:
            for child in children:
                code = child.exited()
                if code is not None and not stopping:
                    wait = child.start_at - time.monotonic()
                    self.stderr.write(
                        f"{child.name} exited with status {code}; starting it again in "
                        f"{wait:.0f} s (the other process keeps running)"
                    )
                if child.proc is None and not stopping and time.monotonic() >= child.start_at:
                    try:
                        self.stderr.write(f"started {child.name} (pid {child.start()})")
                    except OSError as exc:  # not even started (a wrong path): retried alike
                        child.failures += 1
                        wait = backoff(child.failures, 1.0, MAX_RESTART_SECONDS)
                        child.start_at = time.monotonic() + wait
                        self.stderr.write(
                            f"{child.name} did not start ({exc}); again in {wait:.0f} s"
                        )
            time.sleep(POLL_SECONDS)

    @staticmethod
    def _reap(children: list[Child]) -> None:
        deadline = time.monotonic() + GRACE_SECONDS
        for child in children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(child.proc, signal.SIGKILL)
                child.proc.wait()
