"""SQLite: the search triggers gain a ``WHEN`` switch (``kb_record_fts_defer``) so bulk
writers can index a batch set-based instead of per row (see kb/browse/search.py). No model state;
nothing to do on PostgreSQL."""

from django.db import migrations


def forwards(apps, schema_editor):
    from kb.records.search_index import install_search_triggers

    install_search_triggers(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_record_file_index")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False)]
