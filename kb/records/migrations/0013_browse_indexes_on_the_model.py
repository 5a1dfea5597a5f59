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

The repair's SQL is 0002's, not taken from ``kb.records.search_index``: that module is the
live upkeep code and may change, and a migration must keep doing what it did; 0002 creates
today's structures, and as a migration it never changes.
"""

from importlib import import_module

from django.db import migrations, models

_SEARCH = import_module("kb.records.migrations.0002_search_and_browse_indexes")
SQLITE_CREATE = _SEARCH.SQLITE_CREATE
SQLITE_FILL = _SEARCH.SQLITE_FILL
POSTGRES_CREATE = _SEARCH.POSTGRES_CREATE

FACETS = ["severity", "error_type", "error_class", "handling_strategy"]
INDEXES = [
    ("kb_record_listing", ["status", "repo", "slug", "id", *FACETS]),
    ("kb_record_browse", ["id", "status", "repo", "slug", *FACETS]),
]

# The search structures whose absence calls for the repair, per backend.
SQLITE_STRUCTURES = [
    "kb_record_fts",
    "kb_record_search_map",
    "kb_record_fts_defer",
    "kb_record_fts_ai",
    "kb_record_fts_ad",
    "kb_record_fts_au",
]
POSTGRES_STRUCTURES = ["kb_record_trgm_document"]





def create_missing(apps, schema_editor):
    for name, fields in INDEXES:
        columns = ", ".join(schema_editor.quote_name(field) for field in fields)
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON kb_errorrecord ({columns})", params=None
        )


def _missing(cursor, vendor):
    if vendor == "sqlite":
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index')")
        wanted = SQLITE_STRUCTURES
    elif vendor == "postgresql":
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", ["kb_errorrecord"])
        wanted = POSTGRES_STRUCTURES
    else:
        return []
    present = {row[0] for row in cursor.fetchall()}
    return [name for name in wanted if name not in present]


def repair_search_index(apps, schema_editor):
    """Recreate the search structures (and refill the SQLite index) if any is missing."""
    connection = schema_editor.connection
    vendor = connection.vendor
    with connection.cursor() as cursor:
        if not _missing(cursor, vendor):
            return
        statements = SQLITE_CREATE + SQLITE_FILL if vendor == "sqlite" else POSTGRES_CREATE
        for sql in statements:
            cursor.execute(sql)


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
