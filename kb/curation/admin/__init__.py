"""The curation admin: records (edit, validate, test bench, history), tags and imports.

Importing the package registers every ModelAdmin with the default admin site (Django's
autodiscovery imports ``kb.curation.admin``).
"""

from __future__ import annotations

from django.contrib import admin

from kb.curation.admin import imports, records, tags
from kb.loop import admin as loop_admin  # the work queue and the loop's tables

admin.site.site_header = "Error knowledge base · curation"
admin.site.site_title = "errorkb admin"

__all__ = ["imports", "loop_admin", "records", "tags"]
