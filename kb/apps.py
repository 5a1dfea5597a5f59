"""App configuration: `kb` is both the Django project and its only app.

Nothing runs after ``migrate``: the migrations themselves create every index and the search
structures (``kb.search.index``), so a database is whole at any migration, not only after
a hook has patched it.
"""

from __future__ import annotations

from django.apps import AppConfig


class KbConfig(AppConfig):
    name = "kb"
    verbose_name = "Error knowledge base"
    default_auto_field = "django.db.models.BigAutoField"
