"""``manage.py match [FILE|-] --json``: which known errors does this text contain?"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kb.limits import TooLarge, check, from_matcher
from kb.matcher import PasteTooLarge
from kb.matching import MatchResult, match_text


class Command(BaseCommand):
    help = "Match text (a FILE, or stdin with '-' or no argument) against every active record."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", metavar="FILE")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=None,
            help="refuse larger input (default: KB_MAX_LOG_BYTES)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        limit = options["max_bytes"] or settings.KB_MAX_LOG_BYTES
        text = self._read(options["file"], limit)
        try:
            result = match_text(text, max_bytes=limit)
        except PasteTooLarge as exc:  # the decoded text grew past the limit
            raise CommandError(from_matcher(exc, "input").detail) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json(), ensure_ascii=False))
        else:
            self._print_human(result)

    def _read(self, name: str, limit: int) -> str:
        try:
            if name == "-":
                data = sys.stdin.buffer.read(limit + 1)
            else:
                with Path(name).open("rb") as fh:
                    data = fh.read(limit + 1)
        except OSError as exc:
            raise CommandError(f"{name}: cannot read: {exc}") from exc
        try:
            check("input", len(data), limit, exact=False)  # read one byte past the limit at most
        except TooLarge as exc:
            raise CommandError(exc.detail) from exc
        return data.decode("utf-8", errors="replace")

    def _print_human(self, result: MatchResult) -> None:
        if not result.matches:
            self.stdout.write("No known error found.")
        for m in result.matches:
            self.stdout.write(
                self.style.ERROR(f"line {m.line}: {m.record.slug} ({m.record.id}, {m.record.repo})")
            )
            self.stdout.write(f"  {m.text}")
            self.stdout.write(f"  {m.reason}")
        for s in result.suggestions:
            self.stdout.write(f"maybe {s.record.id} ({s.similarity:.2f}): {s.reason}")
        self.stdout.write(f"{result.elapsed_ms:.1f} ms")
