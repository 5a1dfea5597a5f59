"""App configuration: `kb` is both the Django project and its only app."""

from __future__ import annotations

from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Error knowledge base"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from kb.search_index import ensure_search_index_after_migrate

        # A migration that rebuilds kb_errorrecord on SQLite drops the search triggers;
        # put them back after every migrate so search never goes stale.
        post_migrate.connect(ensure_search_index_after_migrate, sender=self)
