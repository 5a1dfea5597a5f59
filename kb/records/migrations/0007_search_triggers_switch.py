"""SQLite: the search triggers gain a ``WHEN`` switch (``kb_record_fts_defer``) so bulk
writers can index a batch set-based instead of per row (see kb/browse/search.py). No model state;
nothing to do on PostgreSQL.

The SQL is written out here, not taken from ``kb.records.search_index``: that module is the
live upkeep code and may change, and a migration must keep doing what it did.
"""

from django.db import migrations

# The tables where missing, then the triggers, each dropped first (the ones before this
# migration had no ``WHEN``). Nothing is refilled.
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


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_CREATE:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [("kb", "0006_record_file_index")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False)]
