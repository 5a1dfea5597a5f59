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

The repair's SQL is written out here, not taken from ``kb.records.search_index``: that
module is the live upkeep code and may change, and a migration must keep doing what it did.
"""

from django.db import migrations, models

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

SQLITE_CREATE = [
    "CREATE TABLE IF NOT EXISTS kb_record_search_map ("
    "fts_rowid INTEGER PRIMARY KEY, record_id varchar(64) NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS kb_record_fts USING fts5("
    "record_id UNINDEXED, message, class, code, slug, documentation, tokenize='trigram')",
    "CREATE TABLE IF NOT EXISTS kb_record_fts_defer (deferred INTEGER NOT NULL)",
    "DELETE FROM kb_record_fts_defer",
    "DROP TRIGGER IF EXISTS kb_record_fts_ai",
    "DROP TRIGGER IF EXISTS kb_record_fts_ad",
    "DROP TRIGGER IF EXISTS kb_record_fts_au",
    "CREATE TRIGGER kb_record_fts_ai AFTER INSERT ON kb_errorrecord "
    "WHEN NOT EXISTS (SELECT 1 FROM kb_record_fts_defer) BEGIN "
    "DELETE FROM kb_record_fts WHERE rowid IN "
    "(SELECT fts_rowid FROM kb_record_search_map WHERE record_id = new.id); "
    "DELETE FROM kb_record_search_map WHERE record_id = new.id; "
    "INSERT INTO kb_record_search_map(record_id) VALUES (new.id); "
    "INSERT INTO kb_record_fts(rowid, record_id, message, class, code, slug, documentation) "
    "VALUES ((SELECT fts_rowid FROM kb_record_search_map WHERE record_id = new.id), new.id, "
    "coalesce(new.error_message, ''), coalesce(new.error_class, ''), "
    "coalesce(new.error_code, ''), coalesce(new.slug, ''), coalesce(new.documentation, '')); "
    "END",
    "CREATE TRIGGER kb_record_fts_ad AFTER DELETE ON kb_errorrecord "
    "WHEN NOT EXISTS (SELECT 1 FROM kb_record_fts_defer) BEGIN "
    "DELETE FROM kb_record_fts WHERE rowid IN "
    "(SELECT fts_rowid FROM kb_record_search_map WHERE record_id = old.id); "
    "DELETE FROM kb_record_search_map WHERE record_id = old.id; "
    "END",
    "CREATE TRIGGER kb_record_fts_au AFTER UPDATE OF "
    "id, error_message, error_class, error_code, slug, documentation ON kb_errorrecord "
    "WHEN (old.id IS NOT new.id OR old.error_message IS NOT new.error_message "
    "OR old.error_class IS NOT new.error_class OR old.error_code IS NOT new.error_code "
    "OR old.slug IS NOT new.slug OR old.documentation IS NOT new.documentation) "
    "AND NOT EXISTS (SELECT 1 FROM kb_record_fts_defer) BEGIN "
    "DELETE FROM kb_record_fts WHERE rowid IN "
    "(SELECT fts_rowid FROM kb_record_search_map WHERE record_id = old.id); "
    "DELETE FROM kb_record_search_map WHERE record_id = old.id; "
    "INSERT INTO kb_record_search_map(record_id) VALUES (new.id); "
    "INSERT INTO kb_record_fts(rowid, record_id, message, class, code, slug, documentation) "
    "VALUES ((SELECT fts_rowid FROM kb_record_search_map WHERE record_id = new.id), new.id, "
    "coalesce(new.error_message, ''), coalesce(new.error_class, ''), "
    "coalesce(new.error_code, ''), coalesce(new.slug, ''), coalesce(new.documentation, '')); "
    "END",
]

SQLITE_FILL = [
    "DELETE FROM kb_record_fts",
    "DELETE FROM kb_record_search_map",
    "INSERT INTO kb_record_search_map(record_id) SELECT id FROM kb_errorrecord ORDER BY id",
    "INSERT INTO kb_record_fts(rowid, record_id, message, class, code, slug, documentation) "
    "SELECT m.fts_rowid, r.id, coalesce(r.error_message, ''), coalesce(r.error_class, ''), "
    "coalesce(r.error_code, ''), coalesce(r.slug, ''), coalesce(r.documentation, '') "
    "FROM kb_errorrecord r JOIN kb_record_search_map m ON m.record_id = r.id",
    "INSERT INTO kb_record_fts(kb_record_fts) VALUES ('optimize')",
]

# Raw SQL, not django.contrib.postgres, as in 0002: TrigramExtension's reverse would drop
# pg_trgm, and a GinIndex is model state, so Django would build it on SQLite too.
POSTGRES_CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS kb_record_trgm_document ON kb_errorrecord USING gin (("
    "upper("
    "coalesce(\"kb_errorrecord\".\"error_message\"::text, '') || ' ' || "
    "coalesce(\"kb_errorrecord\".\"error_class\"::text, '') || ' ' || "
    "coalesce(\"kb_errorrecord\".\"error_code\"::text, '') || ' ' || "
    "coalesce(\"kb_errorrecord\".\"slug\"::text, '') || ' ' || "
    "coalesce(\"kb_errorrecord\".\"documentation\"::text, '')"
    ")) gin_trgm_ops)",
]


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
