"""Full-text search and browse indexes (see kb/search.py): no model state, backend SQL.

SQLite: an FTS5 trigram table, its rowid map and the triggers that keep both in step with
``kb_errorrecord``, filled from the existing rows. PostgreSQL: the pg_trgm extension and GIN
trigram index over the searched fields. Both: covering indexes for lists, tags, facets.
"""

from django.db import migrations


def forwards(apps, schema_editor):
    from kb.search_index import create_search_index

    create_search_index(schema_editor)


def backwards(apps, schema_editor):
    from kb.search_index import drop_search_index

    drop_search_index(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
