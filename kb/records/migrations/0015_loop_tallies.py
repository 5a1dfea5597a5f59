"""Each record's vote tally (the work queue ranks complaints by an indexed column, not an
aggregate of every vote) and the day's voter salt (kb/loop/models.py says why each).

The backfill counts the record-level votes already stored (a vote on a solution step is
about that step, not the record); the ``(verdict, record)`` index only that aggregate read
goes.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count

COLUMNS = {"fixed": "fixed", "not_fixed": "not_fixed", "wrong_match": "wrong_match"}


def backfill(apps, schema_editor):
    Vote = apps.get_model("kb", "Vote")
    RecordTally = apps.get_model("kb", "RecordTally")
    tallies = {}
    rows = (
        Vote.objects.filter(step__isnull=True)
        .values("record_id", "verdict")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows.iterator(chunk_size=5000):
        tally = tallies.setdefault(row["record_id"], RecordTally(record_id=row["record_id"]))
        setattr(tally, COLUMNS[row["verdict"]], row["n"])
    for tally in tallies.values():
        tally.complaints = tally.not_fixed + tally.wrong_match
    RecordTally.objects.bulk_create(tallies.values(), batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0014_learning_loop"),
    ]

    operations = [
        migrations.CreateModel(
            name="RecordTally",
            fields=[
                (
                    "record",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="tally",
                        serialize=False,
                        to="kb.errorrecord",
                    ),
                ),
                ("fixed", models.PositiveIntegerField(default=0)),
                ("not_fixed", models.PositiveIntegerField(default=0)),
                ("wrong_match", models.PositiveIntegerField(default=0)),
                ("complaints", models.PositiveIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="VoterSalt",
            fields=[
                ("day", models.DateField(primary_key=True, serialize=False)),
                ("salt", models.CharField(max_length=64)),
            ],
        ),
        migrations.RemoveIndex(
            model_name="vote",
            name="kb_vote_verdict",
        ),
        migrations.AddIndex(
            model_name="recordtally",
            index=models.Index(fields=["-complaints", "record"], name="kb_tally_complaints"),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
