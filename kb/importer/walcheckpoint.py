"""SQLite write settings for the length of a batched import, and WAL checkpoints off the
writer's thread.

In WAL mode a commit appends the transaction's pages to the ``-wal`` file; a *checkpoint*
later copies them into the database file. By default the committing connection runs one
itself whenever the WAL is past 1,000 pages, which for an import is at every batch's commit:
about half of all commit time, on the writer's thread. During an import the writer's
automatic checkpoints are off (``wal_autocheckpoint=0``) and a helper thread with its own
connection runs a ``PASSIVE`` checkpoint after each commit, in parallel with the next batch
(SQLite lets a checkpoint run beside a writer; it never blocks the writer or readers). The
WAL is rewound as soon as a checkpoint has caught up, so it stays one or two batches long.
The import ends with a last checkpoint; then the connection's settings are put back.

The batches also commit with ``synchronous=NORMAL`` instead of ``FULL``: in WAL mode that
is still safe from corruption (the database stays consistent after a crash or power cut),
but a power cut may lose the last committed batches. An import can afford that: it is
re-runnable and idempotent, so running the file again completes it. Everything else on the
connection (a curator's edit) keeps ``FULL``.

Only for a SQLite file database in WAL mode with the import committing batch by batch; in
an outer transaction (``--atomic``, tests) or on PostgreSQL nothing changes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError

IMPORT_SYNCHRONOUS = "NORMAL"
# SQLite rewinds the WAL only when a write transaction starts after a checkpoint has caught
# up. The writer begins its next batch right after a commit, before the helper's checkpoint
# of that commit is done, so the WAL would grow without end (650 MB by 50k records). When
# it is past this size (frames in use, as the last checkpoint counted them: the file keeps
# its largest size) the writer waits for the running checkpoint before its next batch, and
# that batch starts the WAL afresh. 50k-record import: 6 waits, 0.5 s, WAL file <= 194 MB.
WAL_LIMIT_BYTES = 128 * 1024 * 1024


class _Checkpointer:
    """A thread that runs ``PASSIVE`` checkpoints on request, on its own connection."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cond = threading.Condition()
        self.requested = self.done = 0
        self.wal_bytes = 0  # the WAL's frames at the last checkpoint (not its file's size)
        self.stopping = self.stopped = False
        self.thread = threading.Thread(target=self._run, name="kb-import-checkpoint", daemon=True)
        self.thread.start()

    def request(self) -> None:
        with self.cond:
            self.requested += 1
            self.cond.notify_all()

    def wait(self) -> None:
        """Until every requested checkpoint has run."""
        with self.cond:
            self.cond.wait_for(lambda: self.done >= self.requested or self.stopped)

    def _run(self) -> None:
        db = None
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            frame_bytes = int(db.execute("PRAGMA page_size").fetchone()[0]) + 24
            while True:
                with self.cond:
                    self.cond.wait_for(lambda: self.requested > self.done or self.stopping)
                    target, stopping = self.requested, self.stopping
                with suppress(sqlite3.Error):  # an optimisation only: the writer catches up
                    _busy, frames, _done = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.wal_bytes = max(frames, 0) * frame_bytes
                with self.cond:
                    self.done = target
                    self.cond.notify_all()
                if stopping:
                    return
        except sqlite3.Error:
            return
        finally:
            if db is not None:
                db.close()
            with self.cond:
                self.stopped = True
                self.cond.notify_all()

    def close(self) -> None:
        """A last checkpoint, then stop."""
        with self.cond:
            self.stopping = True
            self.requested += 1
            self.cond.notify_all()
        self.thread.join()


def _wal_file(connection: Any) -> str | None:
    """The main database file if ``connection`` is SQLite on a file in WAL mode."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        return None
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        if str(cursor.fetchone()[0]).lower() != "wal":
            return None
        cursor.execute("PRAGMA database_list")
        for _seq, name, path in cursor.fetchall():
            if name == "main":
                return path or None
    return None


@contextmanager
def batch_commits(connection: Any) -> Iterator[Callable[[], None]]:
    """For an import that commits batch by batch: yields ``committed()``, to be called after
    each batch's commit (see the module docstring)."""
    path = _wal_file(connection)
    if path is None:
        yield lambda: None
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        synchronous = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA wal_autocheckpoint")
        autocheckpoint = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA synchronous={IMPORT_SYNCHRONOUS}")
        cursor.execute("PRAGMA wal_autocheckpoint=0")
    checkpointer = _Checkpointer(path)

    def committed() -> None:
        checkpointer.request()
        if checkpointer.wal_bytes > WAL_LIMIT_BYTES:
            checkpointer.wait()  # see WAL_LIMIT_BYTES

    try:
        yield committed
    finally:
        checkpointer.close()
        if connection.connection is not None:  # not closed meanwhile (a database error)
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"PRAGMA synchronous={synchronous}")
                    cursor.execute(f"PRAGMA wal_autocheckpoint={autocheckpoint}")
            except DatabaseError:  # a new connection gets the settings' pragmas again
                connection.close()
