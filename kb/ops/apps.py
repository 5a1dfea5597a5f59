from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "kb.ops"
    label = "ops"
    verbose_name = "Operations"
