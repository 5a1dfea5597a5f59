"""SQLite: the search triggers gain a ``WHEN`` switch (``kb_record_fts_defer``) so bulk
writers can index a batch set-based instead of per row (see kb/browse/search.py). No model state;
nothing to do on PostgreSQL.

The SQL is 0002's, not taken from ``kb.records.search_index``: that module is the live
upkeep code and may change, and a migration must keep doing what it did; 0002 already
creates today's triggers, and as a migration it never changes.
"""

from importlib import import_module

from django.db import migrations

# The tables where missing, then the triggers, each dropped first (the ones before this
# migration had no ``WHEN``). Nothing is refilled.
SQLITE_CREATE = import_module("kb.records.migrations.0002_search_and_browse_indexes").SQLITE_CREATE


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_CREATE:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_record_file_index")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False)]
