"""``manage.py export_records [FILE|-]``: every record in the dataset's JSONL shape."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kb.exporter import export_lines


class Command(BaseCommand):
    help = "Export every record as JSONL (to FILE, or stdout with '-' or no argument)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        target = options["file"]
        if target == "-":
            out = sys.stdout
            for line in export_lines():
                out.write(line + "\n")
            out.flush()
            return
        path = Path(target)
        tmp = path.with_name(path.name + ".part")
        count = 0
        with tmp.open("w", encoding="utf-8") as fh:
            for line in export_lines():
                fh.write(line + "\n")
                count += 1
        tmp.replace(path)
        self.stderr.write(f"Exported {count} records to {path}")
