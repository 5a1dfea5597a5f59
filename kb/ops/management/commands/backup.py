"""``manage.py backup FILE`` (and ``backup --restore FILE``): a consistent copy of the
database while the app keeps writing.

SQLite: SQLite's Online Backup API (``sqlite3.Connection.backup``, all pages in one step,
so the copy is one read snapshot; in WAL mode writers carry on meanwhile), or ``VACUUM
INTO`` with ``--method vacuum`` (a compacted copy, same snapshot guarantee). The copy is
written to ``FILE.part``, checked with ``PRAGMA integrity_check`` and only then renamed
to FILE, so a FILE that exists is always a whole, checked backup.

PostgreSQL: a real backup is ``pg_dump``'s job (``pg_dump -Fc``, restored with
``pg_restore``). This command falls back to ``dumpdata`` (JSON of every model) so the
drill works on both backends; it is consistent only if nothing writes meanwhile.

Restore (see docs/backup.md): ``backup --restore FILE`` copies an SQLite backup back into
the configured database with the same Backup API (stop the app's writers first), or, for
a JSON dump, empties the database and loads the dump in one transaction.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

SQLITE_MAGIC = b"SQLite format 3\x00"
DUMP_EXCLUDE = ["sessions", "admin.logentry"]


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of an SQLite file ("ok" when sound)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()
    return "; ".join(str(r[0]) for r in rows)


def _is_sqlite_file(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


class Command(BaseCommand):
    help = "Back up the database to FILE while the app runs (or --restore FILE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE")
        parser.add_argument(
            "--method",
            choices=["backup", "vacuum"],
            default="backup",
            help="SQLite: Online Backup API (default) or VACUUM INTO (compacted)",
        )
        parser.add_argument(
            "--restore", action="store_true", help="restore FILE into the configured database"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"]).resolve()
        if options["restore"]:
            self._restore(path)
            return
        if connection.vendor == "sqlite":
            self._backup_sqlite(path, options["method"])
        else:
            self._dump(path)

    # --- backup -----------------------------------------------------------------------

    def _backup_sqlite(self, path: Path, method: str) -> None:
        part = path.with_name(path.name + ".part")
        part.unlink(missing_ok=True)
        connection.ensure_connection()
        source = connection.connection
        if method == "vacuum":
            with connection.cursor() as cursor:
                cursor.execute("VACUUM INTO %s", [str(part)])
        else:
            target = sqlite3.connect(part)
            try:
                source.backup(target)  # pages=-1: one step, one consistent snapshot
            finally:
                target.close()
        verdict = integrity(part)
        if verdict != "ok":
            part.unlink(missing_ok=True)
            raise CommandError(f"backup failed its integrity check: {verdict}")
        os.replace(part, path)
        self.stderr.write(f"Backed up to {path} ({path.stat().st_size:,} bytes, integrity ok)")

    def _dump(self, path: Path) -> None:
        self.stderr.write(
            f"{connection.vendor}: a real backup is pg_dump's job (pg_dump -Fc); "
            "writing a dumpdata JSON fallback (consistent only without concurrent writes)."
        )
        part = path.with_name(path.name + ".part")
        call_command("dumpdata", exclude=DUMP_EXCLUDE, output=str(part), verbosity=0, indent=None)
        os.replace(part, path)
        self.stderr.write(f"Dumped to {path}")

    # --- restore ----------------------------------------------------------------------

    def _restore(self, path: Path) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        if _is_sqlite_file(path):
            if connection.vendor != "sqlite":
                raise CommandError("an SQLite backup restores into SQLite only (use JSON)")
            verdict = integrity(path)
            if verdict != "ok":
                raise CommandError(f"{path} failed its integrity check: {verdict}")
            connection.ensure_connection()
            source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                source.backup(connection.connection)
            finally:
                source.close()
        else:
            with tempfile.TemporaryDirectory() as tmp:
                fixture = Path(tmp) / "restore.json"  # loaddata goes by the extension
                fixture.symlink_to(path)
                with transaction.atomic():
                    call_command("flush", interactive=False, inhibit_post_migrate=True, verbosity=0)
                    call_command("loaddata", str(fixture), verbosity=0)
        self.stderr.write(f"Restored from {path}")
