from __future__ import annotations

from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "kb.records"
    label = "kb"
    verbose_name = "Error records"
