"""Which ids earlier lines of this file already had: exact, and memory-flat.

A within-file duplicate is rejected naming the first line with that id, so every id seen
so far must be remembered; a dict of them would grow with the file, without bound. They
live instead in a private temporary on-disk SQLite database (``sqlite3.connect("")``:
deleted when closed, its page cache capped small), checked and extended once per batch,
so memory stays flat whatever the file's size. Unrelated to the Django database: the
same on every backend.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_CHUNK = 500  # ids per lookup (well under SQLite's parameter limit)


class SeenIds:
    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-2000;"
            "CREATE TABLE seen (id TEXT PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID;"
        )

    def first_lines(self, ids: list[str]) -> dict[str, int]:
        """The line of each of ``ids`` already seen (absent ids are left out)."""
        found: dict[str, int] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(
                self._db.execute(f"SELECT id, line FROM seen WHERE id IN ({marks})", chunk)
            )
        return found

    def add(self, pairs: Iterable[tuple[str, int]]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany("INSERT INTO seen (id, line) VALUES (?, ?)", pairs)
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
