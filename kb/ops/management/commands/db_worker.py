"""``manage.py db_worker``: django-tasks-db's task worker, which a locked or read-only
database pauses instead of ending.

django-tasks-db's worker skips a locked poll only when the lock is met inside its claim
query; ``BEGIN`` itself (SQLite takes the write lock there) and everything around a task
raise out of its loop, and the process exits: one long ``import_records --atomic``, admin
action or open ``sqlite3`` shell held the write lock past the busy timeout, and queued
imports waited for a person to start the worker again. This command is the same worker
(same options: every caller, the Procfile, ``run_with_worker`` and the systemd unit, starts
it by the same name), whose loop, when the database declines a write for now
(``kb.http.write_unavailable``), logs one line, waits with exponential backoff (up to
``MAX_BACKOFF_SECONDS``) and polls again; anything else still ends the process, for
whatever runs it to restart (docs/deployment.md).

``kb.ops`` is listed before ``django_tasks_db`` in ``INSTALLED_APPS`` so that this command
is the one ``manage.py db_worker`` finds. Its SQLite connection waits
``SQLITE_WORKER_BUSY_TIMEOUT`` for the write lock, longer than a web request's
``SQLITE_BUSY_TIMEOUT``: an import batch may queue behind a curator's save.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django_tasks_db.management.commands import db_worker

from kb.http import write_unavailable
from kb.ops.retry import backoff

log = logging.getLogger("django_tasks_db")

FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0


class PatientWorker(db_worker.Worker):
    """The worker loop, resumed after a locked or read-only database."""

    sleep = staticmethod(time.sleep)

    def run(self) -> None:
        attempt = 0
        while self.running:
            started = time.monotonic()
            try:
                super().run()
                return  # --batch or --max-tasks: done
            except DatabaseError as exc:
                kind = write_unavailable(exc)
                if kind is None:
                    raise
                # A run that lasted longer than the longest wait was a recovery: start over.
                if time.monotonic() - started > MAX_BACKOFF_SECONDS:
                    attempt = 0
                attempt += 1
                wait = backoff(attempt, FIRST_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS)
                log.warning(
                    "database %s (%s); task worker polls again in %.1f s",
                    kind,
                    str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__,
                    wait,
                )
                # A connection in a failed transaction is no use: the next poll opens anew.
                for connection in connections.all(initialized_only=True):
                    connection.close_if_unusable_or_obsolete()
                self.startup_delay = False
                self.sleep(wait)


class Command(db_worker.Command):
    help = (
        "Run the database task worker; a locked or read-only database pauses it "
        "(retried with backoff) instead of ending it."
    )
    # No system checks at start: Django's SQLite feature test behind the JSONField check
    # opens a write transaction, so a worker (re)started while another process holds the
    # write lock would fail "SQLite does not support JSONFields" and exit. The release
    # steps (`manage.py check --deploy`, `migrate`) and the web server's start run them.
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        for connection in connections.all():
            if connection.vendor == "sqlite":
                connection.close()  # the next query connects with the worker's timeout
                connection.settings_dict.setdefault("OPTIONS", {})["timeout"] = (
                    settings.SQLITE_WORKER_BUSY_TIMEOUT
                )
        # The library builds its worker by this name: the patient one runs in its place.
        db_worker.Worker = PatientWorker  # type: ignore[misc]
        super().handle(*args, **options)
