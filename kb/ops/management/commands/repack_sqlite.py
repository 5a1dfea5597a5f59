"""``manage.py repack_sqlite [--page-size N]``: rewrite an existing SQLite database with the
page size a new one gets (16 KiB; ``kb/settings.py``).

A page size is fixed when a database is created; an older database keeps its 4 KiB pages,
where a record's few kilobytes spill onto overflow pages (slower reads, and an import
writes about a quarter more). SQLite changes it only by rebuilding the file with
``VACUUM``, and only outside WAL mode, which needs the database to itself: stop the app,
its workers and any import first. The command refuses, and changes nothing, while any
other connection is open. Afterwards the database is in WAL mode again and passes
``PRAGMA integrity_check``.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from kb.ops.management.commands.backup import integrity

PAGE_SIZE = 16384


class Command(BaseCommand):
    help = "Rewrite the SQLite database with 16 KiB pages (stop the app first)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--page-size",
            type=int,
            default=PAGE_SIZE,
            choices=[4096, 8192, 16384, 32768, 65536],
            help=f"bytes per page (default {PAGE_SIZE})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "sqlite":
            raise CommandError("repack_sqlite is for SQLite databases only")
        path = Path(str(connection.settings_dict["NAME"]))
        if not path.is_file():
            raise CommandError(f"{path}: no such database file")
        connection.close()  # this process's own connection would hold the file too
        wanted = options["page_size"]
        db = sqlite3.connect(path, isolation_level=None, timeout=1)
        try:
            before = int(db.execute("PRAGMA page_size").fetchone()[0])
            if before == wanted:
                self.stdout.write(f"{path}: already {wanted}-byte pages, nothing to do")
                return
            size_before = path.stat().st_size
            started = time.monotonic()
            try:
                mode = str(db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower()
            except sqlite3.OperationalError as exc:
                mode = str(exc)
            if mode != "delete":
                raise CommandError(
                    f"{path} is in use ({mode}): stop the app, its workers and any import, "
                    "then run this again"
                )
            try:
                db.execute(f"PRAGMA page_size={wanted}")
                db.execute("VACUUM")
            finally:
                db.execute("PRAGMA journal_mode=WAL")
            after = int(db.execute("PRAGMA page_size").fetchone()[0])
        finally:
            db.close()
        check = integrity(path)
        if check != "ok":
            raise CommandError(f"{path}: integrity_check after the rewrite: {check}")
        self.stdout.write(
            f"{path}: pages {before} -> {after} bytes, "
            f"{size_before / 1e6:,.1f} -> {path.stat().st_size / 1e6:,.1f} MB "
            f"in {time.monotonic() - started:.1f} s; integrity_check ok"
        )
