from __future__ import annotations

from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "kb.curation"
    label = "curation"
    verbose_name = "Curation"
