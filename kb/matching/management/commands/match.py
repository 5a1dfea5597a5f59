"""``manage.py match [FILE|-] [--format text|json|github|markdown]``: which known errors
does this text contain?

The exit status is for a CI step to branch on: 0 when the text holds no known error
(suggestions alone do not count), 1 when it holds at least one, 2 for a usage error (a bad
option, a file that cannot be read, input past the limit), 3 when matching itself could not
run (the database cannot be read). ``--json`` stays as the contract spells it, and keeps the
contract's status too: tools that call ``match FILE --json`` read stdout and treat any
non-zero status as a failure, so with ``--json`` a run that matched exits 0 whatever it
found; ``--format json`` gives the CI statuses. Exit 1 is only given from the command line:
``call_command`` returns normally whatever was found, since a caller in Python reads the
result itself. A gzip-compressed FILE (found by its magic bytes) is read decompressed, its
size bounded by ``--max-bytes`` too. The input is read in blocks and decompressed as a
stream (``kb.matching.holder.match_log``): a log past ``KB_MATCH_WHOLE_BYTES`` is matched
from the lines that matter, in bounded memory, with the answer of reading it whole.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from kb.engine import PasteTooLarge
from kb.http import TooLarge, bounded, from_matcher, gunzip_blocks
from kb.matching.formats import FORMATS, known_count, render
from kb.matching.formats.data import report_data
from kb.matching.holder import LogMatch, match_log

NOTHING_KNOWN, KNOWN_FOUND, USAGE, CANNOT_MATCH = 0, 1, 2, 3


class Command(BaseCommand):
    help = (
        "Match text (a FILE, or stdin with '-' or no argument) against every active record. "
        "Exit 0: no known error; 1: known errors found; 2: usage error; 3: cannot match. "
        "With --json (the stable machine form) a run that matched exits 0."
    )
    exit_code = NOTHING_KNOWN

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", metavar="FILE")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default=None,
            help="text (default), json (the contract's object), github (workflow "
            "commands annotating the log's lines), markdown (a ticket summary)",
        )
        parser.add_argument("--json", action="store_true", help="the same as --format json")
        parser.add_argument(
            "--annotate-file",
            default=None,
            metavar="PATH",
            help="the file the github annotations point at (default: FILE, unless stdin)",
        )
        parser.add_argument(
            "--base-url",
            default="",
            metavar="URL",
            help="make record links absolute, e.g. https://kb.example.org",
        )
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=None,
            help="refuse larger input (default: KB_MAX_LOG_BYTES)",
        )

    def run_from_argv(self, argv: list[str]) -> None:
        super().run_from_argv(argv)
        if self.exit_code:
            sys.exit(self.exit_code)

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = options["format"] or ("json" if options["json"] else "text")
        if options["json"] and fmt != "json":
            raise CommandError("--json and --format are two choices of format", returncode=USAGE)
        limit = options["max_bytes"] or settings.KB_MAX_LOG_BYTES
        got = self._match(options["file"], limit)
        base = options["base_url"].rstrip("/")
        data = report_data(
            got.result, got.text, absolute=lambda path: base + path, to_text=got.to_text
        )
        annotate = options["annotate_file"]
        if annotate is None and options["file"] != "-":
            annotate = options["file"]
        self.stdout.write(render(fmt, data, file=annotate), ending="")
        found = known_count(data) and not options["json"]
        self.exit_code = KNOWN_FOUND if found else NOTHING_KNOWN

    def _match(self, name: str, limit: int) -> LogMatch:
        try:
            with self._open(name) as fh:
                # A .gz log (found by its magic bytes) is matched as the log it holds, as
                # POST /api/match reads it: the same file gives the same answer either way.
                blocks = gunzip_blocks(bounded(_blocks(fh, name), "input", limit), "input", limit)
                return match_log(blocks, max_bytes=limit)
        except TooLarge as exc:
            raise CommandError(exc.detail, returncode=USAGE) from exc
        except PasteTooLarge as exc:  # the decoded text grew past the limit
            raise CommandError(from_matcher(exc, "input").detail, returncode=USAGE) from exc
        except DatabaseError as exc:
            raise CommandError(f"cannot read the records: {exc}", returncode=CANNOT_MATCH) from exc
        except _Unreadable as exc:
            raise CommandError(f"{name}: cannot read: {exc}", returncode=USAGE) from exc
        except ValueError as exc:
            raise CommandError(f"{name}: {exc}", returncode=USAGE) from exc

    def _open(self, name: str) -> contextlib.AbstractContextManager[BinaryIO]:
        if name == "-":
            return contextlib.nullcontext(sys.stdin.buffer)
        try:
            return Path(name).open("rb")
        except OSError as exc:
            raise CommandError(f"{name}: cannot read: {exc}", returncode=USAGE) from exc


READ_BLOCK = 1024 * 1024


class _Unreadable(Exception):
    """The input failed while it was read (not a refusal of what it holds)."""


def _blocks(fh: BinaryIO, name: str) -> Iterator[bytes]:
    while True:
        try:
            block = fh.read(READ_BLOCK)
        except OSError as exc:
            raise _Unreadable(str(exc)) from exc
        if not block:
            return
        yield block
