"""A record's release history (firstRelease, lastRelease, removedIn, releaseHistory,
retiredWordings: docs/importing.md).

On SQLite a JSON column with a default is added by rebuilding the table, which drops the
triggers on it: as in 0021, the search index's and the delete trigger are put back after
the rebuild and, when this migration is reversed, after that one too.
"""

from importlib import import_module

from django.db import migrations, models

put_back_triggers = import_module(
    "kb.records.migrations.0021_field_records_without_source"
).put_back_triggers


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0021_field_records_without_source'),
    ]

    operations = [
        # Reversed last: after the reverse's rebuild.
        migrations.RunPython(migrations.RunPython.noop, put_back_triggers, elidable=False),
        migrations.AddField(
            model_name='errorrecord',
            name='first_release',
            field=models.CharField(blank=True, help_text='The first release whose code has it.', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='errorrecord',
            name='last_release',
            field=models.CharField(blank=True, help_text='The last release whose code has it.', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='errorrecord',
            name='release_history',
            field=models.JSONField(blank=True, help_text='Its wordings, locations and commits across releases (the dataset key ``releaseHistory``: kb.records.schema).', null=True),
        ),
        migrations.AddField(
            model_name='errorrecord',
            name='removed_in',
            field=models.CharField(blank=True, help_text='The first release without it (empty: still in the code).', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='errorrecord',
            name='retired_wordings',
            field=models.JSONField(blank=True, default=list, help_text='Patterns of older wordings a curator retired: no longer matched.'),
        ),
        migrations.AddField(
            model_name='historicalerrorrecord',
            name='first_release',
            field=models.CharField(blank=True, help_text='The first release whose code has it.', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='historicalerrorrecord',
            name='last_release',
            field=models.CharField(blank=True, help_text='The last release whose code has it.', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='historicalerrorrecord',
            name='removed_in',
            field=models.CharField(blank=True, help_text='The first release without it (empty: still in the code).', max_length=100, null=True),
        ),
        migrations.AddField(
            model_name='historicalerrorrecord',
            name='retired_wordings',
            field=models.JSONField(blank=True, default=list, help_text='Patterns of older wordings a curator retired: no longer matched.'),
        ),
        migrations.AddIndex(
            model_name='errorrecord',
            index=models.Index(fields=['repo', 'first_release', 'last_release'], name='kb_record_release'),
        ),
        migrations.RunPython(put_back_triggers, migrations.RunPython.noop, elidable=False),
    ]
