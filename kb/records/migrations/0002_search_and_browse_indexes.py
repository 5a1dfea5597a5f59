"""Full-text search and browse indexes (see kb/browse/search.py): no model state, backend SQL.

SQLite: an FTS5 trigram table, its rowid map and the triggers that keep both in step with
``kb_errorrecord``, filled from the existing rows. PostgreSQL: the pg_trgm extension and GIN
trigram index over the searched fields. Both: covering indexes for lists, tags, facets
(declared on the model from 0013 on; created here, as they were, for the migrations between).
"""

from django.db import migrations

BROWSE_INDEXES = [
    ("kb_record_list", "status, repo, slug, id"),
    (
        "kb_record_browse",
        "id, status, repo, slug, severity, error_type, error_class, handling_strategy",
    ),
]


def forwards(apps, schema_editor):
    from kb.records.search_index import create_search_index

    create_search_index(schema_editor)
    for name, columns in BROWSE_INDEXES:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON kb_errorrecord ({columns})", params=None
        )


def backwards(apps, schema_editor):
    from kb.records.search_index import drop_search_index

    for name in ("kb_record_list", "kb_record_listing", "kb_record_browse"):
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}", params=None)
    drop_search_index(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
