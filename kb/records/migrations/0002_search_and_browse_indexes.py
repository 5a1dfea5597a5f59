"""Full-text search and browse indexes (see kb/browse/search.py): no model state, backend SQL.

SQLite: an FTS5 trigram table, its rowid map and the triggers that keep both in step with
``kb_errorrecord``, filled from the existing rows. PostgreSQL: the pg_trgm extension and GIN
trigram index over the searched fields. Both: covering indexes for lists, tags, facets
(declared on the model from 0013 on; created here, as they were, for the migrations between).

The SQL is written out here, not taken from ``kb.records.search_index``: that module is the
live upkeep code and may change, and a migration must keep doing what it did.
"""

from django.db import migrations

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

SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS kb_record_fts_ai",
    "DROP TRIGGER IF EXISTS kb_record_fts_ad",
    "DROP TRIGGER IF EXISTS kb_record_fts_au",
    "DROP TABLE IF EXISTS kb_record_fts",
    "DROP TABLE IF EXISTS kb_record_search_map",
    "DROP TABLE IF EXISTS kb_record_fts_defer",
]

# Raw SQL, not django.contrib.postgres: TrigramExtension's reverse drops pg_trgm, which this
# migration's reverse never did, and GinIndex belongs in the model state, so Django would
# create it on SQLite too; the index is over an expression, for PostgreSQL only.
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

POSTGRES_DROP = ["DROP INDEX IF EXISTS kb_record_trgm_document"]

BROWSE_INDEXES = [
    ("kb_record_list", "status, repo, slug, id"),
    (
        "kb_record_browse",
        "id, status, repo, slug, severity, error_type, error_class, handling_strategy",
    ),
]


def _execute(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql, params=None)


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor, SQLITE_CREATE + SQLITE_FILL)
    elif vendor == "postgresql":
        _execute(schema_editor, POSTGRES_CREATE)
    for name, columns in BROWSE_INDEXES:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON kb_errorrecord ({columns})", params=None
        )


def backwards(apps, schema_editor):
    for name in ("kb_record_list", "kb_record_listing", "kb_record_browse"):
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}", params=None)
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor, SQLITE_DROP)
    elif vendor == "postgresql":
        _execute(schema_editor, POSTGRES_DROP)


class Migration(migrations.Migration):
    dependencies = [("kb", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
