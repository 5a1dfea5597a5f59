"""``manage.py export_records [FILE|-]``: every record in the dataset's JSONL shape."""

from __future__ import annotations

from typing import TextIO

from kb.records.exporter import export_lines
from kb.records.management.export_command import ExportCommand


class Command(ExportCommand):
    help = "Export every record as JSONL (to FILE, or stdout with '-' or no argument)."
    what = "records"

    def write(self, out: TextIO) -> int:
        count = 0
        for line in export_lines():
            out.write(line + "\n")
            count += 1
        return count
