"""Drop indexes no query needs; each cost every import a B-tree insert per row.

- ``kb_errorrecord``: the single-column indexes on ``repo`` and ``status``; equality on
  either uses the leading column of a composite index (``kb_record_repo_sev`` /
  ``kb_record_file``; ``kb_record_active``).
- ``kb_historicalerrorrecord``: the filter indexes simple-history copied from the record
  (``HISTORY_UNINDEXED`` in kb/records/models.py, plus repo and status). History is read per record
  (``id``) in ``history_date`` order: both indexes stay.
- ``kb_recordtag``: the index on ``record_id``; the unique (record, tag) index leads with it.

Django's own ``AlterField`` would rebuild ``kb_errorrecord`` on SQLite (copy, drop, rename),
losing the search triggers and browse indexes that ``kb.records.search_index`` kept there in raw
SQL, so the model state changes here but the database only loses the named indexes:
``DROP INDEX IF EXISTS`` with the names Django gave them (on PostgreSQL also the ``_like``
twin of a varchar index). Backwards recreates them.
"""

import django.db.models.deletion
from django.db import migrations, models

# (model, column) whose plain ``db_index`` index goes.
DROPPED = [
    ("errorrecord", "repo"),
    ("errorrecord", "status"),
    # The history table's copies (HISTORY_UNINDEXED in kb/records/models.py, plus repo and status),
    # frozen here as they were when this migration was written.
    *(
        ("historicalerrorrecord", column)
        for column in "repo slug error_code error_type error_class severity handling_strategy "
        "background_tag status".split()
    ),
    ("recordtag", "record_id"),
]


def _index_names(schema_editor, table, column):
    name = schema_editor._create_index_name(table, [column])
    names = [name]
    if schema_editor.connection.vendor == "postgresql":
        names.append(schema_editor._create_index_name(table, [column], suffix="_like"))
    return names


def forwards(apps, schema_editor):
    quote = schema_editor.quote_name
    for model_name, column in DROPPED:
        table = apps.get_model("kb", model_name)._meta.db_table
        for name in _index_names(schema_editor, table, column):
            schema_editor.execute(f"DROP INDEX IF EXISTS {quote(name)}", params=None)


def backwards(apps, schema_editor):
    for model_name, column in DROPPED:
        model = apps.get_model("kb", model_name)
        field = next(f for f in model._meta.concrete_fields if f.column == column)
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))
        like = getattr(schema_editor, "_create_like_index_sql", None)
        if like is not None:
            sql = like(model, field)
            if sql is not None:
                schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("kb", "0007_search_triggers_switch")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[
                migrations.AlterField(
                    model_name="errorrecord",
                    name="repo",
                    field=models.CharField(max_length=200),
                ),
                migrations.AlterField(
                    model_name="errorrecord",
                    name="status",
                    field=models.CharField(
                        choices=[
                            ("draft", "Draft"),
                            ("published", "Published"),
                            ("retired", "Retired"),
                        ],
                        default="published",
                        max_length=20,
                    ),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="background_tag",
                    field=models.CharField(blank=True, max_length=100, null=True),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="error_class",
                    field=models.CharField(blank=True, max_length=200, null=True),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="error_code",
                    field=models.CharField(blank=True, max_length=200, null=True),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="error_type",
                    field=models.CharField(max_length=40),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="handling_strategy",
                    field=models.CharField(blank=True, max_length=60, null=True),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="repo",
                    field=models.CharField(max_length=200),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="severity",
                    field=models.CharField(
                        choices=[("fatal", "Fatal"), ("error", "Error"), ("warning", "Warning")],
                        max_length=20,
                    ),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="slug",
                    field=models.CharField(max_length=200),
                ),
                migrations.AlterField(
                    model_name="historicalerrorrecord",
                    name="status",
                    field=models.CharField(
                        choices=[
                            ("draft", "Draft"),
                            ("published", "Published"),
                            ("retired", "Retired"),
                        ],
                        default="published",
                        max_length=20,
                    ),
                ),
                migrations.AlterField(
                    model_name="recordtag",
                    name="record",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        to="kb.errorrecord",
                    ),
                ),
            ],
        )
    ]
