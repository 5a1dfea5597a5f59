from __future__ import annotations

from django.apps import AppConfig


class BrowseConfig(AppConfig):
    name = "kb.browse"
    label = "browse"
    verbose_name = "Browse and search"
