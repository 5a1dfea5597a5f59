"""The covering browse indexes join the model's ``Meta.indexes``; search is whole after it.

``kb_record_listing`` and ``kb_record_browse`` were created in raw SQL (0002, 0005) and a
``post_migrate`` hook put them back whenever a SQLite table rebuild dropped them. Declared
on the model, Django recreates them with any rebuild, and ``makemigrations`` sees them. The
database already has them: the state gains them, the database only creates them where a
lost one is missing (``IF NOT EXISTS``, same names and columns).

The search structures a model cannot declare (SQLite's FTS5 table and triggers, the
PostgreSQL trigram index) stay with the migrations: this one repairs any database whose
triggers a rebuild dropped, as the hook did, so from here on no hook runs after ``migrate``.
Backwards leaves the database as 0012 had it (the indexes were there then too).
"""

from django.db import migrations, models

FACETS = ["severity", "error_type", "error_class", "handling_strategy"]
INDEXES = [
    ("kb_record_listing", ["status", "repo", "slug", "id", *FACETS]),
    ("kb_record_browse", ["id", "status", "repo", "slug", *FACETS]),
]


def create_missing(apps, schema_editor):
    for name, fields in INDEXES:
        columns = ", ".join(schema_editor.quote_name(field) for field in fields)
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON kb_errorrecord ({columns})", params=None
        )


def repair_search_index(apps, schema_editor):
    from kb.records.search_index import ensure_search_index

    ensure_search_index(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("kb", "0012_severity_unindexed")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(create_missing, migrations.RunPython.noop, elidable=False)
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name="errorrecord",
                    index=models.Index(fields=fields, name=name),
                )
                for name, fields in INDEXES
            ],
        ),
        migrations.RunPython(repair_search_index, migrations.RunPython.noop, elidable=False),
    ]
