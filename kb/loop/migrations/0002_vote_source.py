"""Each vote's source: the digest of the address it came from that day (kb/loop/models.py
and kb/loop/votes.py say why), and the ``(record, day, source)`` index the per-address cap
reads.

Votes stored before have no address to digest; each is given its own voter as its source,
so the step order keeps counting them as the distinct voters they were counted as.
"""

from django.db import migrations, models
from django.db.models import F


def backfill(apps, schema_editor):
    apps.get_model("loop", "Vote").objects.filter(source="").update(source=F("voter"))


class Migration(migrations.Migration):
    dependencies = [
        ("loop", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="vote",
            name="source",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="vote",
            index=models.Index(fields=["record", "day", "source"], name="kb_vote_source"),
        ),
    ]
