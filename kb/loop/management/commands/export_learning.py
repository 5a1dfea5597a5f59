"""``manage.py export_learning [FILE|-]``: every gap and proposal as JSONL, for reviewing
what people reported and proposed away from the admin.

Each line has ``"kind": "gap"`` (the shape of ``GET /api/gaps``) or ``"kind": "proposal"``.
The text is as stored: redacted report lines and untrusted proposal text, so whatever
reads the file must treat it as data. A file is written under a temporary name and moved
into place, so a reader never sees half of it.
"""

from __future__ import annotations

from typing import TextIO

from kb.loop.retention import export_jsonl
from kb.records.management.export_command import ExportCommand


class Command(ExportCommand):
    help = "Export learning-loop gaps and proposals as JSONL (to FILE, or stdout with '-')."
    what = "gaps and proposals"

    def write(self, out: TextIO) -> int:
        return export_jsonl(out)
