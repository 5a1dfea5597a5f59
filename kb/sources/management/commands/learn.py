"""``manage.py learn SOURCE [--rev REV] [--repo OWNER/NAME] [--json]``: learn error records
from a git repository, a package-index release or a source archive
(docs/learning-a-codebase.md; its command line and ``--json`` object are a contract).

Runs the worker's learn (``kb.sources.tasks.execute_learn``) in this process, on a
``Source`` found by its location or created for it, printing progress to stderr as the
files are read. Exits 0 when it ran, 1 when the source could not be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kb.sources.learning import LearnResult
from kb.sources.models import Kind, LearnJob, Source, kind_of
from kb.sources.tasks import execute_learn


class Command(BaseCommand):
    help = (
        "Learn error records from a codebase: a git repository, pypi:NAME==VERSION or an archive."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "source", help="a git repository's path or remote, pypi:NAME==VERSION, or an archive"
        )
        parser.add_argument("--rev", default="", help="the commit, tag or branch (default HEAD)")
        parser.add_argument(
            "--repo", default="", help="owner/name as records show it (sqlalchemy/sqlalchemy)"
        )
        parser.add_argument(
            "--releases",
            default="",
            help="learn every release: a tag pattern (rel_*, v*) or, for pypi:NAME, a "
            "version range (>=1.11,<2.1)",
        )
        parser.add_argument("--since", default="", help="the oldest release to learn (a version)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        location = options["source"].strip()
        if kind_of(location) in {Kind.GIT, Kind.ARCHIVE} and not location.startswith("/"):
            location = str(Path(location).resolve())
        source = Source.objects.filter(location=location).first() or Source(location=location)
        if options["repo"]:
            source.repo = options["repo"]
        walks = bool(options["releases"] or options["since"])
        if walks:
            source.releases, source.since = options["releases"], options["since"]
            # the walk's last point, past the newest release (default: HEAD)
            source.revision = options["rev"] or source.revision or "HEAD"
        try:
            source.full_clean()
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
        source.save()
        # Without --releases the command reads one revision, even of a source whose
        # releases the admin named (asking for a revision is what says so to the task).
        revision = "" if walks else options["rev"] or (source.revision if source.releases else "")
        job = LearnJob.objects.create(
            source=source, requested_revision=revision or "", state=LearnJob.State.RUNNING
        )
        as_json = options["json"]

        def show(result: LearnResult) -> None:
            self.stderr.write(
                f"{result.files_read}/{result.files_total} files read, {result.sites} sites"
            )

        job, result = execute_learn(job, show)
        if result is None:
            raise CommandError(f"{source.location}: {job.error}")
        if as_json:
            self.stdout.write(json.dumps(result.contract_json()))
            return
        self.stdout.write(_summary(result))


def _summary(result: LearnResult) -> str:
    lines = [
        f"{result.source} at {result.revision}"
        + (f" (files changed since {result.since})" if result.since else ""),
        f"files read {result.files_read} of {result.files_total}, skipped {result.files_skipped}, "
        f"sites {result.sites}",
        f"created {result.created}, updated {result.updated}, unchanged {result.unchanged}, "
        f"gone {result.gone}, conflicts {result.conflicts}, errors {result.errors}",
    ]
    lines += [f"  {p['path']}: {p['reason']}" for p in result.problems]
    return "\n".join(lines)
