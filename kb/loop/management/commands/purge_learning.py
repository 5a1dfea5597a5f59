"""``manage.py purge_learning [--days N] [--dry-run]``: delete what the retention no longer
keeps (usage rows, votes, gaps last reported before it, rejected proposals).

Run it daily (cron, a systemd timer): the learning loop keeps aggregates for spotting
trends, and ``KB_LEARNING_RETENTION_DAYS`` says how far back that needs to go.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from kb.loop.retention import purge


class _DryRun(Exception):
    """Raised inside the purge's transaction to roll it back after counting."""


class Command(BaseCommand):
    help = "Delete learning-loop data older than the retention (KB_LEARNING_RETENTION_DAYS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=int, default=None, help="Keep this many days (default: the setting)."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would go, delete nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = (
            options["days"] if options["days"] is not None else settings.KB_LEARNING_RETENTION_DAYS
        )
        if days < 1:
            raise CommandError("--days must be at least 1")
        cutoff = timezone.now() - timedelta(days=days)
        done: dict[str, int] = {}
        try:
            with transaction.atomic():
                done = purge(older_than=cutoff)
                if options["dry_run"]:
                    raise _DryRun
        except _DryRun:
            pass
        verb = "Would delete" if options["dry_run"] else "Deleted"
        counts = ", ".join(f"{n} {what}" for what, n in done.items())
        self.stdout.write(f"{verb} {counts} (older than {days} days).")
