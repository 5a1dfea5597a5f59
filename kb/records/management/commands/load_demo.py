"""``manage.py load_demo``: import the demo sample from ``fixtures/`` into an empty database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from kb.records.models import ErrorRecord

DEMO_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo-records.jsonl"


class Command(BaseCommand):
    help = "Load fixtures/demo-records.jsonl when the database holds no records yet."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="import even if not empty")

    def handle(self, *args: Any, **options: Any) -> None:
        if ErrorRecord.objects.exists() and not options["force"]:
            count = ErrorRecord.objects.count()
            self.stdout.write(f"Database already holds {count} records; demo data not loaded.")
            return
        call_command("import_records", str(DEMO_FILE), stdout=self.stdout)
