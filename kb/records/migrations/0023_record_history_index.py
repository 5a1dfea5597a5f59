"""The records with a release history in an index of their own: a matcher build reads their
older wordings without reading every row. Adding an index rebuilds no table (SQLite's
triggers stay)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('kb', '0022_release_history'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='errorrecord',
            index=models.Index(condition=models.Q(('release_history__isnull', False)), fields=['id'], name='kb_record_history'),
        ),
    ]
