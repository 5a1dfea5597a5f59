"""Deleting records bumps the revision, whoever deletes them: a database trigger.

Why a trigger and not ``post_delete`` or the services: every worker keeps matching a
record until the revision moves (``kb.matching.holder`` reads it, then finds the deleted
keys), and a delete can come from anywhere -- ``QuerySet.delete()`` in a shell (no
``post_delete`` per row on Django's fast path), an instance's ``delete()``, a ``TRUNCATE``
or an ``sqlite3``/``psql`` session. Only the database sees them all
(docs/reliability.md#r38-deletes-bump-revision).

The trigger only moves an existing counter (``UPDATE``, never an ``INSERT``): a flush
followed by a copy of the counter's row (``copy_database``) must not collide with a row the
trigger made. So the row is made here when it is missing; ``next_revision()`` makes it too.

SQLite: a row trigger (SQLite has no statement triggers), so a delete of n rows moves the
counter by n, which is as good as 1 to a reader comparing revisions. PostgreSQL: one bump
per statement that deleted rows (a transition table says whether any did), and one per
``TRUNCATE``.

Django's SQLite schema editor rebuilds ``kb_errorrecord`` for some ``AlterField``s and the
table's triggers do not come back with it: a migration that rebuilds the table must
recreate this trigger from SQL it holds (``tests/test_deletes_bump_revision.py`` checks it
is there after all migrations). The SQL is held here, as every migration holds its own.
"""

from django.db import migrations

ENSURE_ROW = (
    "INSERT INTO kb_revision (id, value) SELECT 1, 0 "
    "WHERE NOT EXISTS (SELECT 1 FROM kb_revision WHERE id = 1)"
)

SQLITE_FORWARDS = [
    ENSURE_ROW,
    "DROP TRIGGER IF EXISTS kb_record_deleted",
    "CREATE TRIGGER kb_record_deleted AFTER DELETE ON kb_errorrecord BEGIN "
    "UPDATE kb_revision SET value = value + 1 WHERE id = 1; "
    "END",
]
SQLITE_BACKWARDS = ["DROP TRIGGER IF EXISTS kb_record_deleted"]

POSTGRES_FORWARDS = [
    ENSURE_ROW,
    "CREATE OR REPLACE FUNCTION kb_records_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "IF EXISTS (SELECT 1 FROM kb_deleted_records) THEN "
    "UPDATE kb_revision SET value = value + 1 WHERE id = 1; "
    "END IF; "
    "RETURN NULL; "
    "END $$",
    "CREATE OR REPLACE FUNCTION kb_records_truncated() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "UPDATE kb_revision SET value = value + 1 WHERE id = 1; "
    "RETURN NULL; "
    "END $$",
    "DROP TRIGGER IF EXISTS kb_record_deleted ON kb_errorrecord",
    "CREATE TRIGGER kb_record_deleted AFTER DELETE ON kb_errorrecord "
    "REFERENCING OLD TABLE AS kb_deleted_records "
    "FOR EACH STATEMENT EXECUTE FUNCTION kb_records_deleted()",
    "DROP TRIGGER IF EXISTS kb_record_truncated ON kb_errorrecord",
    "CREATE TRIGGER kb_record_truncated AFTER TRUNCATE ON kb_errorrecord "
    "FOR EACH STATEMENT EXECUTE FUNCTION kb_records_truncated()",
]
POSTGRES_BACKWARDS = [
    "DROP TRIGGER IF EXISTS kb_record_truncated ON kb_errorrecord",
    "DROP TRIGGER IF EXISTS kb_record_deleted ON kb_errorrecord",
    "DROP FUNCTION IF EXISTS kb_records_truncated()",
    "DROP FUNCTION IF EXISTS kb_records_deleted()",
]


def _execute(schema_editor, statements):
    for sql in statements:
        schema_editor.execute(sql, params=None)


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor, SQLITE_FORWARDS)
    elif vendor == "postgresql":
        _execute(schema_editor, POSTGRES_FORWARDS)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor, SQLITE_BACKWARDS)
    elif vendor == "postgresql":
        _execute(schema_editor, POSTGRES_BACKWARDS)


class Migration(migrations.Migration):
    dependencies = [("kb", "0019_move_loop_and_store_out")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
