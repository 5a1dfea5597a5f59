"""App configuration: `kb` is both the Django project and its only app."""

from __future__ import annotations

from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Error knowledge base"
    default_auto_field = "django.db.models.BigAutoField"
