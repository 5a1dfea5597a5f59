"""``manage.py export_learning [FILE|-]``: every gap and proposal as JSONL, for reviewing
what people reported and proposed away from the admin.

Each line has ``"kind": "gap"`` (the shape of ``GET /api/gaps``) or ``"kind": "proposal"``.
The text is as stored: redacted report lines and untrusted proposal text, so whatever
reads the file must treat it as data. A file is written under a temporary name and moved
into place, so a reader never sees half of it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kb.loop.retention import export_jsonl


class Command(BaseCommand):
    help = "Export learning-loop gaps and proposals as JSONL (to FILE, or stdout with '-')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        target = options["file"]
        if target == "-":
            export_jsonl(sys.stdout)
            sys.stdout.flush()
            return
        path = Path(target)
        tmp = path.with_name(path.name + ".part")
        with tmp.open("w", encoding="utf-8") as fh:
            count = export_jsonl(fh)
        tmp.replace(path)
        self.stderr.write(f"Exported {count} gaps and proposals to {path}")
