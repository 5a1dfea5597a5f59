"""A record reported from the field has no source location: repository and file path may be
empty, line numbers null (a curator's record made from a gap; docs/curating.md).

On SQLite a column's NULL-ability changes by rebuilding the table, which drops the
triggers on it: the search triggers 0002 put there and 0020's delete trigger. 0013's
repair puts back whatever the search index misses (its SQL is 0002's, frozen as migrations
are) and 0020's forwards recreate the delete trigger, after the rebuild and, when this
migration is reversed (a second rebuild), after that one too.
"""

from importlib import import_module

from django.db import migrations, models

repair_search_index = import_module(
    "kb.records.migrations.0013_browse_indexes_on_the_model"
).repair_search_index
recreate_delete_trigger = import_module("kb.records.migrations.0020_deletes_bump_revision").forwards


def put_back_triggers(apps, schema_editor):
    repair_search_index(apps, schema_editor)
    recreate_delete_trigger(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0020_deletes_bump_revision"),
    ]

    operations = [
        # Reversed last: after the reverse's rebuild.
        migrations.RunPython(migrations.RunPython.noop, put_back_triggers, elidable=False),
        migrations.AlterField(
            model_name="errorrecord",
            name="file_path",
            field=models.CharField(
                blank=True, help_text="Optional, like the repository.", max_length=500
            ),
        ),
        migrations.AlterField(
            model_name="errorrecord",
            name="line_number",
            field=models.PositiveIntegerField(
                blank=True, help_text="Optional, like the repository.", null=True
            ),
        ),
        migrations.AlterField(
            model_name="errorrecord",
            name="repo",
            field=models.CharField(
                blank=True,
                help_text="Optional: empty for a record reported from the field (no source location).",
                max_length=200,
            ),
        ),
        migrations.AlterField(
            model_name="errorrecord",
            name="source_code_end",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="errorrecord",
            name="source_code_start",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="historicalerrorrecord",
            name="file_path",
            field=models.CharField(
                blank=True, help_text="Optional, like the repository.", max_length=500
            ),
        ),
        migrations.AlterField(
            model_name="historicalerrorrecord",
            name="line_number",
            field=models.PositiveIntegerField(
                blank=True, help_text="Optional, like the repository.", null=True
            ),
        ),
        migrations.AlterField(
            model_name="historicalerrorrecord",
            name="repo",
            field=models.CharField(
                blank=True,
                help_text="Optional: empty for a record reported from the field (no source location).",
                max_length=200,
            ),
        ),
        migrations.AlterField(
            model_name="historicalerrorrecord",
            name="source_code_end",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="historicalerrorrecord",
            name="source_code_start",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(put_back_triggers, migrations.RunPython.noop, elidable=False),
    ]
