"""The default order (repo, slug, id) gets its own index, in place of (repo, severity).

The admin's record list shows every status in the model's order; with no index for it,
SQLite read and sorted the whole first repository's rows for each page. No query needs (repo, severity): the public lists use the covering
``kb_record_listing`` (status first), and equality on ``repo`` alone uses the leading
column of the new index, so an import still writes the same number of indexes.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0010_history_without_source"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="errorrecord", name="kb_record_repo_sev"),
        migrations.AddIndex(
            model_name="errorrecord",
            index=models.Index(fields=["repo", "slug", "id"], name="kb_record_order"),
        ),
    ]
