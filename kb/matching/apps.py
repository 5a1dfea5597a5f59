from __future__ import annotations

from django.apps import AppConfig


class MatchingConfig(AppConfig):
    name = "kb.matching"
    label = "matching"
    verbose_name = "Matching"
