"""Replace the list index with one that also holds the facet columns (see kb/search.py).

Databases migrated before this have ``kb_record_list``; a facet filter on it read every
record row. ``ensure_search_index`` drops it and creates ``kb_record_listing`` (no model
state; both backends).
"""

from django.db import migrations


def forwards(apps, schema_editor):
    from kb.search_index import ensure_search_index

    ensure_search_index(schema_editor.connection)


def backwards(apps, schema_editor):
    schema_editor.execute("DROP INDEX IF EXISTS kb_record_listing", params=None)
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS kb_record_list ON kb_errorrecord (status, repo, slug, id)",
        params=None,
    )


class Migration(migrations.Migration):
    dependencies = [("kb", "0004_curators_group")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
