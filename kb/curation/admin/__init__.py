"""The curation admin: records (edit, validate, pattern tester, history), tags and imports.

Importing the package registers these ModelAdmins with the default admin site (Django's
autodiscovery imports each app's ``admin``; the learning loop's is ``kb.loop.admin``).
"""

from __future__ import annotations

from django.contrib import admin

from kb.curation.admin import imports, records, tags

admin.site.site_header = "Error knowledge base · curation"
admin.site.site_title = "errorkb admin"

__all__ = ["imports", "records", "tags"]
