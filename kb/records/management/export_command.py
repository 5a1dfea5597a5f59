"""The one shape of the export commands: ``manage.py export_X [FILE|-]``."""

from __future__ import annotations

from typing import Any, TextIO

from django.core.management.base import BaseCommand, CommandParser

from kb.records.exporter import write_export


class ExportCommand(BaseCommand):
    """Writes JSONL to FILE (atomically) or to stdout; says on stderr how many it wrote."""

    what = "items"

    def write(self, out: TextIO) -> int:
        raise NotImplementedError

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        count, path = write_export(options["file"], self.write)
        if path is not None:
            self.stderr.write(f"Exported {count} {self.what} to {path}")
