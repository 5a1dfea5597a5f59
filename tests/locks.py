"""A write lock held by another process on the test database's SQLite file, as an open
``sqlite3`` shell (``BEGIN IMMEDIATE``) or a long ``import_records --atomic`` holds it
(docs/reliability.md#r31-locked-database)."""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType

HOLD = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
    "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()"
)


class WriteLock:
    """``with WriteLock(): ...``: the lock is held once the constructor returns, until
    ``release()`` or the end of the block."""

    def __init__(self) -> None:
        from django.db import connection

        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(connection.settings_dict["NAME"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __enter__(self) -> WriteLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
