"""Run the line parser in a helper thread, a bounded number of batches ahead of the writer.

An import is two halves of about equal cost: parsing and checking lines (pure Python) and
writing batches (mostly inside SQLite's C code, or waiting on PostgreSQL). Python's
``sqlite3`` and ``psycopg`` release the GIL while the database works, so a parser thread
runs during the writer's statements and commits: on two cores the halves overlap. A thread
rather than a process: nothing is pickled, the parser shares the writer's memory, and the
Django connection (and the transaction a test or ``--atomic`` holds) stays in the writer's
thread, the only one that touches the database.

Memory stays flat: at most ``depth`` parsed batches wait in the queue. Whatever the parser
raises (a read error, a bug) is raised again in the consumer; when the consumer stops
early (a database error, an interrupt), the parser stops after its current batch and its
generator is closed in its own thread (so its ``finally`` blocks run there).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

_POLL = 0.05  # seconds between the producer's checks of the stop flag while the queue is full


def read_ahead[T](items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """Yield ``items`` as produced by a helper thread at most ``depth`` items ahead."""
    slots: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[bool, object]) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((False, None))
        except BaseException as exc:  # handed to the consumer, raised there
            put((False, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="kb-import-parser", daemon=True)
    thread.start()
    try:
        while True:
            ok, value = slots.get()
            if ok:
                yield value  # type: ignore[misc]
            elif value is None:
                return
            else:
                raise value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()
