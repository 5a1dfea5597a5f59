"""``manage.py import_records FILE [FILE ...] [--dry-run] [--json] [--atomic]
[--batch-size N] [--no-matcher]``.

The importer (``kb.records.importer``) writes the records; when they changed what is
matched, the command then builds the matcher and publishes it to the store
(``kb.curation.tasks.publish_matcher``) before it exits, so no web process compiles on a
paste afterwards (``--no-matcher`` leaves the build to someone else: a benchmark timing
the import alone). That is why the command lives in the curation app, above both the
records and the matcher, like the admin's import task.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from kb.curation.tasks import changed_records, publish_matcher_safely
from kb.records.importer import (
    BATCH_SIZE,
    COMMIT_RECORDS,
    ImportReport,
    decompressed,
    import_jsonl,
    read_lines,
)


def open_source(name: str, stack: ExitStack) -> IO[bytes]:
    """A binary stream for FILE or ``-`` (stdin), gzip or not (``decompressed``)."""
    if name == "-":
        raw: IO[bytes] = sys.stdin.buffer
    else:
        path = Path(name)
        if not path.is_file():
            raise CommandError(f"{name}: no such file")
        raw = stack.enter_context(path.open("rb"))
    stream = decompressed(raw)
    if stream is not raw:
        stack.enter_context(stream)
    return stream


class Command(BaseCommand):
    help = "Import error records from JSONL files (plain or gzip; '-' reads stdin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--dry-run", action="store_true", help="validate, write nothing")
        parser.add_argument("--json", action="store_true", help="print one JSON summary")
        parser.add_argument(
            "--atomic",
            action="store_true",
            help="all-or-nothing: any rejected line rolls the whole import back",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=COMMIT_RECORDS,
            help=f"records per transaction (default {COMMIT_RECORDS}; ignored with --atomic)",
        )
        parser.add_argument(
            "--no-matcher",
            action="store_true",
            help="import only: leave the matcher build to a worker or warm_matcher (the "
            "first paste compiles it if nobody builds it)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        total = ImportReport(dry_run=options["dry_run"])
        for name in options["files"]:
            total.add(self._import_one(name, options))
        if changed_records(total.as_json()) and not options["no_matcher"]:
            publish_matcher_safely()
        if options["json"]:
            self.stdout.write(json.dumps(total.as_json(), ensure_ascii=False))
            return
        self._print_human(total, options["verbosity"])

    def _import_one(self, name: str, options: dict[str, Any]) -> ImportReport:
        show_progress = not options["json"] and self.stdout.isatty()
        started = time.monotonic()

        def progress(lines: int) -> None:
            if show_progress:
                rate = lines / max(time.monotonic() - started, 1e-6)
                self.stdout.write(f"\r  {name}: {lines:,} lines, {rate:,.0f} lines/s ", ending="")
                self.stdout.flush()

        try:
            with ExitStack() as stack:
                stream = open_source(name, stack)
                report = import_jsonl(
                    read_lines(stream),
                    dry_run=options["dry_run"],
                    atomic=options["atomic"],
                    source=Path(name).name if name != "-" else "stdin",
                    progress=progress,
                    batch_size=min(BATCH_SIZE, max(1, options["batch_size"])),
                    commit_records=max(1, options["batch_size"]),
                )
        except (OSError, EOFError) as exc:  # a bad gzip stream is an OSError too
            raise CommandError(f"{name}: cannot read: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"{name}: database error: {exc}") from exc
        if show_progress:
            self.stdout.write("")
        return report

    def _print_human(self, report: ImportReport, verbosity: int) -> None:
        style = self.style
        prefix = "Dry run: would have " if report.dry_run else ""
        self.stdout.write(
            style.SUCCESS(
                f"{prefix}created {report.created}, updated {report.updated}, "
                f"unchanged {report.unchanged}, rejected {report.rejected}, "
                f"disabled {report.disabled} (stale {report.stale}, "
                f"curator conflicts {report.conflicts})"
            )
        )
        if report.rolled_back:
            self.stdout.write(style.ERROR("Atomic import rolled back: nothing was written."))
        for item in report.disabled_records[: None if verbosity > 1 else 20]:
            self.stdout.write(
                style.WARNING(f"  line {item['line']}: disabled {item['id']}: {item['reason']}")
            )
        for err in report.errors[: None if verbosity > 1 else 50]:
            self.stdout.write(style.WARNING(f"  {err}"))
        hidden = len(report.errors) - 50 if verbosity <= 1 else 0
        if hidden > 0 or report.errors_truncated:
            self.stdout.write(f"  … {max(hidden, 0) + report.errors_truncated} more")
