"""A record reported from the field has no source location: repository and file path may be
empty, line numbers null (a curator's record made from a gap; docs/curating.md).

On SQLite a column's NULL-ability changes by rebuilding the table, which drops the search
triggers 0002 put on it; 0013's repair puts back whatever is missing (its SQL is 0002's,
frozen as migrations are), so search stays whole after this one too.
"""

from importlib import import_module

from django.db import migrations, models

repair_search_index = import_module(
    "kb.records.migrations.0013_browse_indexes_on_the_model"
).repair_search_index


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0019_move_loop_and_store_out"),
    ]

    operations = [
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
        migrations.RunPython(repair_search_index, migrations.RunPython.noop, elidable=False),
    ]
