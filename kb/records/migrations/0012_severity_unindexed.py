"""``severity`` loses its single-column index.

Three values, each on a large share of the records: SQLite, which keeps no statistics,
still took the index for ``severity = ?`` and then looked up and sorted most of the table.
Without it, the public list filtered by a tag and a severity is counted through
``kb_record_browse`` and the admin's list filtered by severity walks ``kb_record_order``
(``tests/test_query_plans.py`` pins both plans). Public facets read the covering
``kb_record_listing``, which has the column. An import writes one index fewer.

As in 0008, the database only loses the named index (``DROP INDEX IF EXISTS``; on
PostgreSQL also its ``_like`` twin): Django's ``AlterField`` would rebuild the table on
SQLite and lose what ``kb.records.search_index`` kept there in raw SQL. Backwards recreates it.
"""

from django.db import migrations, models

SEVERITY = [("fatal", "Fatal"), ("error", "Error"), ("warning", "Warning")]


def _index_names(schema_editor, table):
    names = [schema_editor._create_index_name(table, ["severity"])]
    if schema_editor.connection.vendor == "postgresql":
        names.append(schema_editor._create_index_name(table, ["severity"], suffix="_like"))
    return names


def forwards(apps, schema_editor):
    table = apps.get_model("kb", "errorrecord")._meta.db_table
    for name in _index_names(schema_editor, table):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def backwards(apps, schema_editor):
    model = apps.get_model("kb", "errorrecord")
    field = model._meta.get_field("severity")
    schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))
    like = getattr(schema_editor, "_create_like_index_sql", None)
    sql = like(model, field) if like is not None else None
    if sql is not None:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("kb", "0011_record_order_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[
                migrations.AlterField(
                    model_name="errorrecord",
                    name="severity",
                    field=models.CharField(choices=SEVERITY, max_length=20),
                ),
            ],
        ),
    ]
